// The cluster DNS address of the real node: every pod's resolv.conf names a fixed
// address, as on GKE.
//
//   - The kubelet writes `nameserver DNSServiceIP` (the conventional kube-dns
//     ClusterIP, inside the API server's service range ServiceCIDR) and the
//     cluster.local search path into every pod. Pointing the kubelet at the
//     resolver pod's IP instead would break every running pod the moment the pod
//     is recreated (its IP changes; resolv.conf is written once per pod).
//   - The Service kube-system/kube-dns holds that clusterIP and selects the
//     resolver pod (dns.go). It is an ordinary Service: the Cilium agent's
//     kube-proxy replacement sends each query to the pod's current address, and
//     follows the pod when it comes back elsewhere.
//   - NetworkPolicy still decides: Cilium enforces it on the Service's backend,
//     the resolver pod, which the tenants' DNS rule (kube-system pods labelled
//     k8s-app=kube-dns, port 53) allows; default deny holds for the rest.
//
// The supervisor recreates the resolver pod when it is gone (keepClusterDNS);
// Up makes sure the Service exists.

package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

const (
	// ServiceCIDR is the real node's service range (the API server's
	// --service-cluster-ip-range).
	ServiceCIDR = "10.96.0.0/12"
	// DNSServiceName and DNSServiceIP are the cluster resolver's Service in
	// DNSNamespace and the nameserver in every pod's resolv.conf.
	DNSServiceName = "kube-dns"
	DNSServiceIP   = "10.96.0.10"
	// ClusterDomain is the kubelet's clusterDomain: pods search
	// <namespace>.svc.cluster.local, svc.cluster.local and cluster.local.
	ClusterDomain = "cluster.local"
)

// dnsService is kube-system/kube-dns: the resolver pod behind the address every
// pod's resolv.conf names.
func dnsService() *corev1.Service {
	port := func(name string, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: 53, Protocol: proto, TargetPort: intstr.FromInt32(53)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: DNSServiceName, Namespace: DNSNamespace,
			Labels: map[string]string{"k8s-app": "kube-dns", "app.kubernetes.io/managed-by": "paddock"},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Selector:  map[string]string{"k8s-app": "kube-dns"},
			Ports:     []corev1.ServicePort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
		},
	}
}

// ensureDNSService creates the kube-dns Service when it is missing. It looks
// first: the API server judges the address before the name, so creating it again
// fails as "already allocated", not as "already exists".
func ensureDNSService(ctx context.Context, cs kubernetes.Interface) error {
	svcs := cs.CoreV1().Services(DNSNamespace)
	cur, err := svcs.Get(ctx, DNSServiceName, metav1.GetOptions{})
	switch {
	case err == nil && cur.Spec.ClusterIP == DNSServiceIP:
		return nil
	case err == nil:
		return fmt.Errorf("Service %s/%s has clusterIP %q, not %s, the address pods are given; delete it and run `paddock local up` again",
			DNSNamespace, DNSServiceName, cur.Spec.ClusterIP, DNSServiceIP)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read Service %s/%s: %w", DNSNamespace, DNSServiceName, err)
	}
	_, err = svcs.Create(ctx, dnsService(), metav1.CreateOptions{FieldManager: "paddock"})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err):
		return fmt.Errorf("create Service %s/%s at %s: %w (a cluster made before its API server was given the service range %s cannot hold it: `paddock local down`, then `paddock local up`)",
			DNSNamespace, DNSServiceName, DNSServiceIP, err, ServiceCIDR)
	default:
		return fmt.Errorf("create Service %s/%s: %w", DNSNamespace, DNSServiceName, err)
	}
}

// resolverTarget looks at the resolver pod once and repairs what it can: it
// creates the pod when it is missing and deletes it when it has ended (the next
// look creates it again). It returns the pod's address ("" while no resolver
// runs) and what it did, if anything.
func resolverTarget(ctx context.Context, cs kubernetes.Interface) (podIP, did string, err error) {
	p, err := cs.CoreV1().Pods(DNSNamespace).Get(ctx, DNSPodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := cs.CoreV1().Pods(DNSNamespace).Create(ctx, dnsPod(), metav1.CreateOptions{FieldManager: "paddock"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", "", fmt.Errorf("create the cluster resolver pod %s/%s: %w", DNSNamespace, DNSPodName, err)
		}
		return "", "created the missing resolver pod", nil
	case err != nil:
		return "", "", err
	case p.DeletionTimestamp != nil:
		return "", "", nil
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		if err := cs.CoreV1().Pods(DNSNamespace).Delete(ctx, DNSPodName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("delete the ended resolver pod: %w", err)
		}
		return "", "deleted the resolver pod, which had ended (" + string(p.Status.Phase) + ")", nil
	case p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "":
		return p.Status.PodIP, "", nil
	}
	return "", "", nil
}
