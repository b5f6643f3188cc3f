// The network probe's DNS part (V10): a tenant's pod must resolve a name as
// an agent would, through its own /etc/resolv.conf, at the cluster resolver,
// the one hole the DNS egress rule opens. Queries go only to addresses of
// the cluster resolver's pods and Services, never to a nameserver
// resolv.conf names that verify cannot tie to them.

package verify

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resolverAddr is an address the cluster resolver answers on.
type resolverAddr struct {
	ip   string
	name string // namespace/name of its pod or Service
	pod  bool
}

func (r resolverAddr) String() string {
	if r.pod {
		return fmt.Sprintf("%s (pod %s)", r.ip, r.name)
	}
	return fmt.Sprintf("%s (Service %s)", r.ip, r.name)
}

// resolverSelector is the cluster resolver's pods, the peer of the DNS
// egress rule (kube-system, k8s-app=kube-dns).
const resolverSelector = "k8s-app=kube-dns"

// resolverAddresses are the cluster resolver's running pods, then the
// cluster IPs of the kube-system Services that select them.
func (v *Verifier) resolverAddresses(ctx context.Context) ([]resolverAddr, error) {
	pods, err := v.kube.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: resolverSelector})
	if err != nil {
		return nil, err
	}
	var out []resolverAddr
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out = append(out, resolverAddr{ip: p.Status.PodIP, name: p.Namespace + "/" + p.Name, pod: true})
		}
	}
	svcs, err := v.kube.CoreV1().Services("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		if s.Spec.Selector["k8s-app"] != "kube-dns" {
			continue
		}
		ips := s.Spec.ClusterIPs
		if len(ips) == 0 && s.Spec.ClusterIP != "" {
			ips = []string{s.Spec.ClusterIP}
		}
		for _, ip := range ips {
			if ip != corev1.ClusterIPNone {
				out = append(out, resolverAddr{ip: ip, name: s.Namespace + "/" + s.Name})
			}
		}
	}
	return out, nil
}

// dnsProbe is one tenant's DNS probe.
type dnsProbe struct {
	side, control *probeSide
	resolvers     []resolverAddr
	resolverErr   error
	result        Result
}

// resolvConf is what a pod's /etc/resolv.conf says.
type resolvConf struct {
	nameservers []string
	text        string // the file, on one line
}

func parseResolvConf(s string) resolvConf {
	var rc resolvConf
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		lines = append(lines, line)
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			rc.nameservers = append(rc.nameservers, f[1])
		}
	}
	rc.text = strings.Join(lines, "; ")
	if rc.text == "" {
		rc.text = "nothing"
	}
	return rc
}

// readResolvConf reads the client's /etc/resolv.conf.
func (v *Verifier) readResolvConf(ctx context.Context, client *corev1.Pod) (resolvConf, error) {
	stdout, stderr, err := v.exec.Exec(ctx, client.Namespace, client.Name, "probe", []string{"sh", "-c", "cat /etc/resolv.conf 2>&1; echo " + probeExitMarker + "$?"})
	if err != nil {
		return resolvConf{}, fmt.Errorf("exec: %v %s", err, firstLine(stderr))
	}
	body, status, ok := splitExit(stdout)
	switch {
	case !ok:
		return resolvConf{}, fmt.Errorf("no exit status in the probe's output %q", firstLine(stdout))
	case status != 0:
		return resolvConf{}, fmt.Errorf("cat exited %d: %s", status, firstLine(strings.TrimSpace(body)))
	}
	return parseResolvConf(body), nil
}

func (v *Verifier) probeDNS(ctx context.Context, d *dnsProbe) Result {
	s := d.side
	subject := s.ns + " DNS"
	if d.resolverErr != nil {
		return fail(subject, "listing the cluster resolver's pods and Services: %v", d.resolverErr)
	}
	var pod *resolverAddr
	known := map[string]resolverAddr{}
	for i, r := range d.resolvers {
		known[r.ip] = r
		if r.pod && pod == nil {
			pod = &d.resolvers[i]
		}
	}
	if pod == nil {
		return notVerifiable(subject, "no cluster resolver pod runs (kube-system, %s), so the DNS path cannot be shown", resolverSelector)
	}
	if !s.tenant.Egress.DNS {
		return v.dnsRefused(ctx, d, *pod)
	}
	deadline := time.Now().Add(probeTimeouts.reach)
	// The hole the DNS rule opens: the resolver's pod, asked directly.
	ok, n, last := reachedTarget(ctx, deadline, func() attempt { return v.lookup(ctx, s.client, pod.ip) })
	if !ok {
		if last.outcome == attemptBroken {
			return fail(subject, "asking the cluster resolver %s directly: the probe did not run (%s)", pod, last.detail)
		}
		return fail(subject, "the cluster resolver %s, which the DNS rule allows, did not answer in %d attempts: %s", pod, n, describe(last))
	}
	// As an agent would: through the resolvers its /etc/resolv.conf names.
	conf, err := v.readResolvConf(ctx, s.client)
	if err != nil {
		return fail(subject, "the cluster resolver %s answers when asked directly, but reading the pod's /etc/resolv.conf failed: %v", pod, err)
	}
	// What resolv.conf names decides what may be asked: the cluster
	// resolver's addresses, and the pod's own loopback; nothing else.
	var foreign, loopback []string
	for _, ns := range conf.nameservers {
		if _, ok := known[ns]; ok {
			continue
		}
		if a, err := netip.ParseAddr(ns); err == nil && a.IsLoopback() {
			loopback = append(loopback, ns)
		} else {
			foreign = append(foreign, ns)
		}
	}
	switch {
	case len(conf.nameservers) == 0:
		return notVerifiable(subject, "the cluster resolver %s answers when asked directly, but the pod's /etc/resolv.conf names no nameserver (it says: %s), so an agent's lookups go nowhere: this cluster does not give pods its resolver (kubelet clusterDNS)", pod, conf.text)
	case len(foreign) > 0:
		return notVerifiable(subject, "the cluster resolver %s answers when asked directly, but the pod's /etc/resolv.conf names %s (it says: %s), which is not an address of the cluster resolver's pods or Services: verify sends nothing to an address it cannot tie to the cluster, so an agent's lookup was not tried", pod, strings.Join(foreign, ", "), conf.text)
	case len(loopback) > 0:
		// The pod's own loopback may be asked: once, as an agent would.
		a := v.lookup(ctx, s.client, "")
		switch a.outcome {
		case attemptReached:
			return notVerifiable(subject, "the cluster resolver %s answers when asked directly; the pod's /etc/resolv.conf names %s, the pod's own loopback (it says: %s), and a lookup through it was answered, but not necessarily by the cluster resolver", pod, strings.Join(loopback, ", "), conf.text)
		case attemptBroken:
			return fail(subject, "resolving %s through /etc/resolv.conf (it says: %s): the probe did not run (%s)", v.opts.DNSProbeName, conf.text, a.detail)
		}
		return notVerifiable(subject, "the cluster resolver %s answers when asked directly, but the pod's /etc/resolv.conf names %s, the pod's own loopback (it says: %s), where nothing answers (%s): an agent's lookups fail, as this cluster does not give pods its resolver (kubelet clusterDNS)", pod, strings.Join(loopback, ", "), conf.text, a.detail)
	}
	ok, n, last = reachedTarget(ctx, deadline, func() attempt { return v.lookup(ctx, s.client, "") })
	via := make([]string, len(conf.nameservers))
	for i, ns := range conf.nameservers {
		via[i] = known[ns].String()
	}
	if !ok {
		if last.outcome == attemptBroken {
			return fail(subject, "resolving %s through /etc/resolv.conf (nameserver %s): the probe did not run (%s)", v.opts.DNSProbeName, strings.Join(via, ", "), last.detail)
		}
		return fail(subject, "%s did not resolve through /etc/resolv.conf (nameserver %s) in %d attempts, although the resolver answers when asked directly: %s", v.opts.DNSProbeName, strings.Join(via, ", "), n, describe(last))
	}
	return pass(subject, "resolved %s through the pod's /etc/resolv.conf (nameserver %s), as an agent would, and the resolver's pod %s answers when asked directly", v.opts.DNSProbeName, strings.Join(via, ", "), pod.ip)
}

// dnsRefused judges a tenant whose spec allows no DNS: its pod must be
// refused by the resolver that answers the control client.
func (v *Verifier) dnsRefused(ctx context.Context, d *dnsProbe, r resolverAddr) Result {
	s := d.side
	deadline := time.Now().Add(probeTimeouts.reach)
	controlOK, why := false, "the control pods did not run"
	if d.control.err == nil {
		ok, n, last := reachedTarget(ctx, deadline, func() attempt { return v.lookup(ctx, d.control.client, r.ip) })
		controlOK = ok
		if !ok {
			why = fmt.Sprintf("the cluster resolver %s did not answer the control client in %s, where no policy applies, in %d attempts (%s)", r, d.control.ns, n, describe(last))
		}
	}
	j := &judgment{
		subject: s.ns + " DNS", from: "a pod of " + s.ns, to: "the cluster resolver " + r.name,
		hole: s.ns + "'s default-deny does not refuse it (the spec allows no DNS)", owner: s, client: s.client, ip: r.ip, port: 53,
		control: "the resolver answered the control client, where no policy applies",
	}
	j.res = refused(ctx, deadline, func() attempt { return v.lookup(ctx, s.client, r.ip) })
	return j.result(controlOK, why)
}
