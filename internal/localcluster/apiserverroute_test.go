package localcluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// On a real node the API server writes no endpoint of its own (it would be
// loopback); the supervisor points the kubernetes Service at the node's
// address on 443, and puts back what the API server wrote before.
func TestKubernetesServiceLeadsToTheNode(t *testing.T) {
	if args := testCluster(t, NodesReal).componentArgs("kube-apiserver"); !slices.Contains(args, "--endpoint-reconciler-type=none") || !slices.Contains(args, "--bind-address=127.0.0.1") {
		t.Errorf("real node's API server: %v", args)
	}
	if args := testCluster(t, NodesFake).componentArgs("kube-apiserver"); slices.Contains(args, "--endpoint-reconciler-type=none") {
		t.Errorf("kwok nodes' API server keeps its own endpoints: %v", args)
	}
	stale := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Name: "https", Port: 31003, Protocol: corev1.ProtocolTCP}},
	}}}
	cs := fake.NewClientset(stale)
	ctx := context.Background()
	did, err := ensureKubernetesEndpoints(ctx, cs, "10.213.7.1")
	if err != nil || did == "" {
		t.Fatalf("first pass: %q, %v", did, err)
	}
	ep, _ := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if a := ep.Subsets[0]; a.Addresses[0].IP != "10.213.7.1" || a.Ports[0].Port != APIServerRoutePort {
		t.Errorf("endpoints %+v", ep.Subsets)
	}
	es, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || es.Endpoints[0].Addresses[0] != "10.213.7.1" || *es.Ports[0].Port != APIServerRoutePort || *es.Ports[0].Name != "https" ||
		es.Labels["kubernetes.io/service-name"] != "kubernetes" {
		t.Errorf("endpoint slice %+v, %v", es, err)
	}
	if did, err := ensureKubernetesEndpoints(ctx, cs, "10.213.7.1"); did != "" || err != nil {
		t.Errorf("second pass changed %q, %v", did, err)
	}
}
