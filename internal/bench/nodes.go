package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// PodsPerFakeNode is how many of the platform's pods the benchmark puts on
// one kwok node: the local cluster's node is shaped like a GKE node (110
// pods, 32 CPUs), which holds about 100 tenants' warm pools, so a larger
// platform gets more nodes of the same shape.
const PodsPerFakeNode = 100

// fakeNodeLabel selects the local cluster's kwok nodes.
const fakeNodeLabel = "type=kwok"

// fakeNodesFor is how many kwok nodes pods need.
func fakeNodesFor(pods int64) int {
	return int((pods + PodsPerFakeNode - 1) / PodsPerFakeNode)
}

// poolPods is how many pods the warm pools of objs run.
func poolPods(objs []*unstructured.Unstructured) (int64, error) {
	want, err := readyWant(objs)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range want {
		n += r
	}
	return n, nil
}

// cloneFakeNode is a new kwok node named name of the same shape as tmpl:
// its labels (the hostname its own), kwok's annotations, taints other than
// the node lifecycle's, capacity and system info.
func cloneFakeNode(tmpl *corev1.Node, name string) *corev1.Node {
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels["kubernetes.io/hostname"] = name
	annotations := map[string]string{}
	for _, k := range []string{"kwok.x-k8s.io/node", "node.alpha.kubernetes.io/ttl"} {
		if v, ok := tmpl.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	var taints []corev1.Taint
	for _, t := range tmpl.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeUnschedulable {
			continue
		}
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    tmpl.Status.Capacity.DeepCopy(),
			Allocatable: tmpl.Status.Allocatable.DeepCopy(),
			Phase:       corev1.NodeRunning,
			NodeInfo:    tmpl.Status.NodeInfo,
		},
	}
}

// EnsureFakeNodes adds kwok nodes like the cluster's first until there are
// enough for pods, and waits until each is Ready. A cluster without kwok
// nodes is left alone. It returns how many it added.
func EnsureFakeNodes(ctx context.Context, kube kubernetes.Interface, pods int64) (int, error) {
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fakeNodeLabel})
	if err != nil {
		return 0, fmt.Errorf("listing the kwok nodes: %w", err)
	}
	if len(list.Items) == 0 {
		return 0, nil
	}
	tmpl := &list.Items[0]
	need := fakeNodesFor(pods)
	var added []string
	for i := len(list.Items); i < need; i++ {
		name := fmt.Sprintf("%s-bench-%d", tmpl.Name, i)
		_, err := kube.CoreV1().Nodes().Create(ctx, cloneFakeNode(tmpl, name), metav1.CreateOptions{FieldManager: "paddock-bench"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return len(added), fmt.Errorf("adding kwok node %s: %w", name, err)
		}
		added = append(added, name)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range added {
		for {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeIsReady(n) {
				break
			}
			if time.Now().After(deadline) {
				return len(added), fmt.Errorf("kwok node %s not Ready after 2 minutes (is kwok running?)", name)
			}
			select {
			case <-ctx.Done():
				return len(added), ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return len(added), nil
}

// nodeIsReady says the node's Ready condition is True and no taint of the
// node lifecycle keeps pods off it.
func nodeIsReady(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready
}
