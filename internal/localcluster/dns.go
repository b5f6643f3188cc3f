package localcluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/pins"
)

// The real node's cluster resolver: the pinned CoreDNS in a kube-system pod
// labelled k8s-app=kube-dns, the label Paddock's DNS-only egress rule allows
// (manifests.DNSEgressRule). It answers the names below (template plugin) and
// no other (nothing here may forward a query off the machine),
// which is all a probe needs to show that a sandbox reaches the cluster
// resolver and no other DNS server. Pods reach it at the kube-dns Service's
// address DNSServiceIP their resolv.conf names (clusterdns.go), or at the pod's
// own IP.
const (
	DNSPodName   = "paddock-dns"
	DNSNamespace = "kube-system"
	// DNSProbeName is a name the resolver answers, with DNSProbeAddress (the
	// kubernetes Service's address in ServiceCIDR). Through a pod's search path
	// "kubernetes.default" finds it too.
	DNSProbeName    = "kubernetes.default.svc." + ClusterDomain
	DNSProbeAddress = "10.96.0.1"
)

// CorefileFor is a Corefile answering name with addr (A) on port 53, UDP and
// TCP, and nothing else: other record types of name are empty (NODATA), every
// other name does not exist (NXDOMAIN). NXDOMAIN, not the SERVFAIL of an
// unknown name in the hosts plugin, is what lets a pod's search path move on
// to its next domain (musl's resolver stops at a SERVFAIL), as kube-dns does.
// The result holds no single quote (it is passed through sh).
func CorefileFor(name, addr string) string {
	match := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSuffix(name, ".")), `\.`, "[.]") + "[.]$"
	return fmt.Sprintf(`.:53 {
  template IN A {
    match "%[1]s"
    answer "{{ .Name }} 30 IN A %[2]s"
    fallthrough
  }
  template ANY ANY {
    match "%[1]s"
    fallthrough
  }
  template ANY ANY {
    rcode NXDOMAIN
  }
  errors
}
`, match, addr)
}

// DNSHostsConfigMap, in DNSNamespace, holds extra names the resolver answers,
// in hosts-file form under the key "hosts": the local stand-ins for names
// outside the cluster (a test's network namespaces), which nothing here may
// ask a real DNS server for. The resolver reads it when it starts and every
// few seconds after; without it the resolver answers what CorefileFor says.
const DNSHostsConfigMap = "paddock-dns-hosts"

const dnsHostsDir = "/etc/paddock-dns"

// resolverCorefile is the resolver's Corefile: the names in DNSHostsConfigMap,
// then CorefileFor's.
func resolverCorefile() string {
	hosts := "  hosts " + dnsHostsDir + "/hosts {\n    reload 2s\n    fallthrough\n  }\n"
	return strings.Replace(CorefileFor(DNSProbeName, DNSProbeAddress), ".:53 {\n", ".:53 {\n"+hosts, 1)
}

func dnsPod() *corev1.Pod {
	optional := true
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
				Command:         []string{"/bin/sh", "-c", fmt.Sprintf("printf '%%s' '%s' > /tmp/Corefile && exec /bin/coredns -conf /tmp/Corefile", resolverCorefile())},
				VolumeMounts:    []corev1.VolumeMount{{Name: "hosts", MountPath: dnsHostsDir, ReadOnly: true}},
				Ports: []corev1.ContainerPort{
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
				},
			}},
			// Its own resolv.conf would name itself (ClusterFirst); it
			// resolves nothing through it, so it gets the node's empty one.
			DNSPolicy: corev1.DNSDefault,
			Volumes: []corev1.Volume{{Name: "hosts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: DNSHostsConfigMap}, Optional: &optional,
			}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// ensureClusterDNS starts the resolver pod (when it is not there yet), waits
// until it runs with an address and makes sure the kube-dns Service exists. The
// supervisor keeps the pod afterwards (keepClusterDNS).
func (c *cluster) ensureClusterDNS(ctx context.Context, cs kubernetes.Interface) error {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var ip string
	for {
		var err error
		ip, _, err = resolverTarget(wctx, cs)
		if err == nil && ip != "" {
			break
		}
		select {
		case <-wctx.Done():
			why := ""
			if err != nil {
				why = " (" + err.Error() + ")"
			}
			return fmt.Errorf("the cluster resolver pod %s/%s did not run within %s%s; see `kubectl -n %s describe pod %s` and %s",
				DNSNamespace, DNSPodName, c.timeout, why, DNSNamespace, DNSPodName, c.logsDir()+"/kubelet.log")
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err := ensureDNSService(ctx, cs); err != nil {
		return err
	}
	c.progress("cluster resolver %s/%s: pods ask %s:53 (Service %s), Cilium's Service load balancing to the pod at %s %s (CoreDNS %s)",
		DNSNamespace, DNSPodName, DNSServiceIP, DNSServiceName, ip, roundDuration(time.Since(start)), pins.CoreDNS)
	return nil
}
