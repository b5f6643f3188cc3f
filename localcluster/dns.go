package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/pins"
)

// The real node's cluster resolver: the pinned CoreDNS in a kube-system pod
// labelled k8s-app=kube-dns, the label Paddock's DNS-only egress rule allows
// (manifests.DNSEgressRule). It answers the names below from its hosts plugin
// and refuses the rest (nothing here may forward a query off the machine),
// which is all a probe needs to show that a sandbox reaches the cluster
// resolver and no other DNS server. The local stack runs no Service proxy, so
// probes address the pod itself, not a kube-dns ClusterIP.
const (
	DNSPodName   = "paddock-dns"
	DNSNamespace = "kube-system"
	// DNSProbeName is a name the resolver answers, with DNSProbeAddress.
	DNSProbeName    = "kubernetes.default.svc.cluster.local"
	DNSProbeAddress = "10.96.0.1"
)

// CorefileFor is a Corefile answering name with addr on port 53, UDP and TCP,
// and nothing else.
func CorefileFor(name, addr string) string {
	return fmt.Sprintf(".:53 {\n  hosts {\n    %s %s\n  }\n  errors\n}\n", addr, name)
}

func dnsPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: DNSPodName, Namespace: DNSNamespace,
			Labels: map[string]string{"k8s-app": "kube-dns", "app.kubernetes.io/managed-by": "paddock"},
		},
		Spec: corev1.PodSpec{
			// The only real node carries the GKE Sandbox taint; the resolver is
			// a system pod and runs under runc, the node's default handler.
			Tolerations: []corev1.Toleration{{Key: gvisorLabelKey, Operator: corev1.TolerationOpEqual, Value: gvisorLabelValue, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name:            "coredns",
				Image:           CoreDNSImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/bin/sh", "-c", fmt.Sprintf("printf '%%s' '%s' > /tmp/Corefile && exec /bin/coredns -conf /tmp/Corefile", CorefileFor(DNSProbeName, DNSProbeAddress))},
				Ports: []corev1.ContainerPort{
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
				},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// ensureClusterDNS starts the resolver pod (when it is not there yet) and
// waits until it runs with an address.
func (c *cluster) ensureClusterDNS(ctx context.Context, cs kubernetes.Interface) error {
	start := time.Now()
	if _, err := cs.CoreV1().Pods(DNSNamespace).Create(ctx, dnsPod(), metav1.CreateOptions{FieldManager: "paddock"}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the cluster resolver pod %s/%s: %w", DNSNamespace, DNSPodName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for {
		p, err := cs.CoreV1().Pods(DNSNamespace).Get(wctx, DNSPodName, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			c.progress("cluster resolver %s/%s at %s:53 %s (CoreDNS %s; no Service proxy runs here)", DNSNamespace, DNSPodName, p.Status.PodIP, roundDuration(time.Since(start)), pins.CoreDNS)
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("the cluster resolver pod %s/%s did not run within %s; see `kubectl -n %s describe pod %s` and %s",
				DNSNamespace, DNSPodName, c.timeout, DNSNamespace, DNSPodName, c.logsDir()+"/kubelet.log")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
