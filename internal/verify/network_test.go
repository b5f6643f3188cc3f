package verify

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/hangguard"
	"github.com/paddock-platform/paddock/internal/model"
)

const resolverIP = "10.213.0.2"

// fakeNet is what the fake cluster's network does with the probe's commands.
type fakeNet struct {
	// open says whether a connection from a pod of namespace from to a pod
	// of namespace to gets through; nil: only within the control namespace.
	open func(from, to string) bool
	// noLoopback: targets do not answer on their own loopback.
	noLoopback bool
	// resolverAnswers says whether the resolver answers a pod of namespace
	// from; nil: always.
	resolverAnswers func(from string) bool
	// resolvConf is every pod's /etc/resolv.conf.
	resolvConf string
	// execFails makes every exec into the pod fail; noNC makes nc missing
	// from the pod's image.
	execFails, noNC func(ns, pod string) bool
	// world are hosts outside the cluster, by name (their address); a pod
	// of namespace ns reaches one when namedOpen(ns, name) (nil: the control
	// only), and gets its address from the resolver when nameAnswered(ns,
	// name) (nil: always). worldDown: no world host answers anyone.
	world        map[string]string
	namedOpen    func(ns, name string) bool
	nameAnswered func(ns, name string) bool
	worldDown    bool

	mu       sync.Mutex
	ipNS     map[string]string
	tried    map[[2]string]int // connections tried, by namespaces
	asked    []string          // DNS servers asked ("" is through resolv.conf)
	controls []string          // control namespaces seen
}

func isControlNS(ns string) bool { return strings.HasPrefix(ns, controlNamespacePrefix) }

func onlyControl(from, to string) bool { return isControlNS(from) && isControlNS(to) }

func exited(body string, status int) string {
	return body + probeExitMarker + fmt.Sprint(status) + "\n"
}

func (n *fakeNet) Exec(_ context.Context, ns, pod, _ string, cmd []string) (string, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.execFails != nil && n.execFails(ns, pod) {
		return "", "error: unable to upgrade connection: container not found (\"probe\")", errors.New("command terminated with exit code 1")
	}
	if len(cmd) != 3 || cmd[0] != "sh" {
		return "", "unexpected command " + strings.Join(cmd, " "), fmt.Errorf("exit 127")
	}
	script := cmd[2]
	f := strings.Fields(strings.ReplaceAll(script, "'", ""))
	switch {
	case strings.HasPrefix(script, "nc -w 2 "):
		if n.noNC != nil && n.noNC(ns, pod) {
			return exited("sh: nc: not found\n", 127), "", nil
		}
		ip := f[3]
		if wip, ok := n.world[ip]; ok { // a name: nc resolves it first
			if n.nameAnswered != nil && !n.nameAnswered(ns, ip) {
				return exited("nc: bad address '"+ip+"'\n", 1), "", nil
			}
			ip = wip
		}
		for name, wip := range n.world {
			if wip != ip {
				continue
			}
			open := n.namedOpen
			if open == nil {
				open = func(ns, _ string) bool { return isControlNS(ns) }
			}
			if !n.worldDown && open(ns, name) {
				return exited("paddock-world "+name+"\n", 0), "", nil
			}
			return exited("nc: timed out\n", 1), "", nil
		}
		if ip == "127.0.0.1" {
			if n.noLoopback {
				return exited("nc: can't connect to remote host (127.0.0.1): Connection refused\n", 1), "", nil
			}
			return exited(probeGreeting+"\n", 0), "", nil
		}
		to := n.ipNS[ip]
		n.tried[[2]string{ns, to}]++
		open := n.open
		if open == nil {
			open = onlyControl
		}
		if open(ns, to) {
			return exited(probeGreeting+"\n", 0), "", nil
		}
		return exited("nc: timed out\n", 1), "", nil
	case strings.HasPrefix(script, "cat /etc/resolv.conf"):
		return exited(n.resolvConf, 0), "", nil
	case strings.HasPrefix(script, "nslookup "):
		name, server := f[1], ""
		if f[2] != "2>&1;" {
			server = f[2]
		}
		n.asked = append(n.asked, server)
		if wip, ok := n.world[name]; ok && server == "" {
			if n.nameAnswered != nil && !n.nameAnswered(ns, name) {
				return exited("Server:\t\t"+resolverIP+"\nAddress:\t"+resolverIP+":53\n\n** server can't find "+name+": REFUSED\n\n", 1), "", nil
			}
			return exited("Server:\t\t"+resolverIP+"\nAddress:\t"+resolverIP+":53\n\nName:\t"+name+"\nAddress: "+wip+"\n\n", 0), "", nil
		}
		via := server
		if via == "" {
			via = "127.0.0.1"
			if rc := parseResolvConf(n.resolvConf); len(rc.nameservers) > 0 {
				via = rc.nameservers[0]
			}
		}
		if via == resolverIP && (n.resolverAnswers == nil || n.resolverAnswers(ns)) {
			return exited("Server:\t\t"+via+"\nAddress:\t"+via+":53\n\nName:\t"+name+"\nAddress: 10.96.0.1\n", 0), "", nil
		}
		if via == "127.0.0.1" {
			return exited("nslookup: write to '127.0.0.1': Connection refused\n;; connection timed out; no servers could be reached\n", 1), "", nil
		}
		return exited(";; connection timed out; no servers could be reached\n", 1), "", nil
	}
	return "", "unexpected command " + script, fmt.Errorf("exit 127")
}

// runningPodsOn makes every created pod run at once on node, with an address
// the fake network knows the namespace of.
func runningPodsOn(kube *fake.Clientset, node string, net *fakeNet) {
	var mu sync.Mutex
	n := 0
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		mu.Lock()
		n++
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
		}
		p.Status.PodIP = fmt.Sprintf("10.213.0.%d", 10+n)
		mu.Unlock()
		net.mu.Lock()
		net.ipNS[p.Status.PodIP] = p.Namespace
		net.mu.Unlock()
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
	kube.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace)
		net.mu.Lock()
		net.controls = append(net.controls, ns.Name)
		net.mu.Unlock()
		return false, nil, nil
	})
}

func resolverPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "paddock-dns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: resolverIP}}
}

const clusterResolvConf = "search agents-team-a.svc.cluster.local svc.cluster.local cluster.local\nnameserver " + resolverIP + "\noptions ndots:5\n"

// twoTenants is examples/local with a second tenant, team-b, like team-a.
func twoTenants(t *testing.T) *model.Platform {
	p := localPlatform(t)
	b := p.Tenants[0]
	b.Name, b.Namespace = "team-b", "agents-team-b"
	p.Tenants = append(p.Tenants, b)
	return p
}

type netCase struct {
	p     *model.Platform
	net   *fakeNet
	nodes []runtime.Object // default: one real node
	noDNS bool
	// probeHosts is Options.FQDNProbeHosts.
	probeHosts []string
}

// runV10 runs V10 on the fake cluster and checks it cleaned up after itself.
func runV10(t *testing.T, c netCase) ([]Result, *fakeNet) {
	t.Helper()
	old := probeTimeouts
	probeTimeouts.start, probeTimeouts.reach, probeTimeouts.loopback, probeTimeouts.hold = 2*time.Second, 2*time.Second, 2*time.Second, time.Second
	t.Cleanup(func() { probeTimeouts = old })
	if c.p == nil {
		c.p = localPlatform(t)
	}
	net := c.net
	if net.resolvConf == "" {
		net.resolvConf = clusterResolvConf
	}
	net.ipNS, net.tried = map[string]string{}, map[[2]string]int{}
	objs := append([]runtime.Object{}, c.nodes...)
	nodeName := "real-0"
	if len(c.nodes) == 0 {
		objs = append(objs, node(nodeName, false))
	} else {
		nodeName = c.nodes[0].(*corev1.Node).Name
	}
	if !c.noDNS {
		objs = append(objs, resolverPod())
	}
	v, kube, _ := fakeVerifier(t, c.p, objs)
	v.opts = Options{ProbeImage: "localhost/paddock/busybox:v1", DNSProbeName: DefaultDNSProbeName, FQDNProbeHosts: c.probeHosts}
	v.exec = net
	runningPodsOn(kube, nodeName, net)
	rs := only(t, v, "V10")

	ctx := context.Background()
	if len(net.controls) != 1 || !isControlNS(net.controls[0]) {
		t.Fatalf("control namespaces created: %v, want one %s<random>", net.controls, controlNamespacePrefix)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, net.controls[0], metav1.GetOptions{}); err == nil {
		t.Errorf("the control namespace %s was left behind", net.controls[0])
	}
	for _, ns := range append([]string{net.controls[0]}, tenantNamespaces(c.p)...) {
		left, _ := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: probeLabel})
		if len(left.Items) != 0 {
			t.Errorf("%d probe pods left behind in %s", len(left.Items), ns)
		}
	}
	return rs, net
}

func tenantNamespaces(p *model.Platform) []string {
	var out []string
	for _, t := range p.Tenants {
		out = append(out, t.Namespace)
	}
	return out
}

// bySubject indexes results by subject, failing on a duplicate.
func bySubject(t *testing.T, rs []Result) map[string]Result {
	t.Helper()
	out := map[string]Result{}
	for _, r := range rs {
		if _, dup := out[r.Subject]; dup {
			t.Fatalf("two results for %s: %+v", r.Subject, rs)
		}
		out[r.Subject] = r
	}
	return out
}

// want asserts the result for subject has status s and mentions words.
func want(t *testing.T, rs map[string]Result, subject string, s Status, words ...string) {
	t.Helper()
	r, ok := rs[subject]
	if !ok {
		t.Fatalf("no result for %q among %v", subject, subjects(rs))
	}
	if r.Status != s {
		t.Errorf("%s: status %s (%s), want %s", subject, r.Status, r.Reason, s)
		return
	}
	for _, w := range words {
		if !strings.Contains(r.Reason, w) {
			t.Errorf("%s: reason %q does not mention %q", subject, r.Reason, w)
		}
	}
}

func subjects(rs map[string]Result) []string {
	var out []string
	for s := range rs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

const (
	egressA   = "agents-team-a egress"
	ingressA  = "agents-team-a ingress"
	podToPodA = "agents-team-a pod to pod (gvisor)"
	dnsA      = "agents-team-a DNS"
)

func TestV10JudgesEachDirectionAgainstTheControl(t *testing.T) {
	rs, net := runV10(t, netCase{net: &fakeNet{}})
	got := bySubject(t, rs)
	if len(got) != 4 {
		t.Fatalf("results %v, want egress, ingress, pod to pod and DNS", subjects(got))
	}
	want(t, got, egressA, Pass, "refused by the control target", "3 times in a row", "the control client reached the control target")
	want(t, got, ingressA, Pass, "the control client in "+controlNamespacePrefix, "refused by a pod of agents-team-a")
	want(t, got, podToPodA, Pass, "refused by another pod of the namespace")
	want(t, got, dnsA, Pass, "through the pod's /etc/resolv.conf (nameserver "+resolverIP+" (pod kube-system/paddock-dns))")
	ns := "agents-team-a"
	control := net.controls[0]
	for _, path := range [][2]string{{ns, control}, {control, ns}, {ns, ns}} {
		if net.tried[path] < denialStreak {
			t.Errorf("%s -> %s tried %d times, want at least %d", path[0], path[1], net.tried[path], denialStreak)
		}
	}
	if !slices.Contains(net.asked, "") || !slices.Contains(net.asked, resolverIP) {
		t.Errorf("DNS servers asked %q: want the resolver pod directly and through resolv.conf (\"\")", net.asked)
	}
}

func TestV10PolicyStoredButNotEnforced(t *testing.T) {
	rs, _ := runV10(t, netCase{net: &fakeNet{open: func(string, string) bool { return true }}})
	got := bySubject(t, rs)
	want(t, got, egressA, Fail, "reached the control target", "agents-team-a's egress policy does not refuse it")
	want(t, got, ingressA, Fail, "reached a pod of agents-team-a", "agents-team-a's ingress policy does not refuse it")
	want(t, got, podToPodA, Fail, "reached another pod of the namespace")
}

// Only the ingress is loosened (an ingress rule allowing everything): only the
// ingress direction fails, caught from the control client.
func TestV10IngressLoosened(t *testing.T) {
	open := func(from, to string) bool { return isControlNS(from) }
	rs, _ := runV10(t, netCase{net: &fakeNet{open: open}})
	got := bySubject(t, rs)
	want(t, got, ingressA, Fail, "the control client in "+controlNamespacePrefix, "reached a pod of agents-team-a", "ingress policy does not refuse it")
	want(t, got, egressA, Pass)
	want(t, got, podToPodA, Pass)
}

// Without the control reaching its own target, a refusal proves nothing.
func TestV10ControlUnreachableIsNotAPass(t *testing.T) {
	rs, _ := runV10(t, netCase{net: &fakeNet{open: func(string, string) bool { return false }}})
	got := bySubject(t, rs)
	for _, s := range []string{egressA, ingressA, podToPodA} {
		want(t, got, s, NotVerifiable, "proves nothing", "the control client could not reach the control target")
	}
}

// An exec that fails, or nc missing from the image, is never a refusal.
func TestV10ProbeThatDidNotRunIsNoRefusal(t *testing.T) {
	tenantClient := func(ns, pod string) bool {
		return ns == "agents-team-a" && strings.Contains(pod, "-client-")
	}
	rs, _ := runV10(t, netCase{net: &fakeNet{execFails: tenantClient}})
	got := bySubject(t, rs)
	want(t, got, egressA, Fail, "the probe did not run", "container not found", "no refusal")
	want(t, got, podToPodA, Fail, "the probe did not run")
	want(t, got, ingressA, Pass) // the control client runs
	want(t, got, dnsA, Fail, "the probe did not run")

	clients := func(_, pod string) bool { return strings.Contains(pod, "-client-") }
	rs, _ = runV10(t, netCase{net: &fakeNet{noNC: clients}})
	got = bySubject(t, rs)
	for _, s := range []string{egressA, ingressA, podToPodA} {
		want(t, got, s, Fail, "the probe did not run", "nc cannot run in the probe image")
	}
}

func TestV10TargetNotListening(t *testing.T) {
	rs, _ := runV10(t, netCase{net: &fakeNet{noLoopback: true}})
	wantStatus(t, rs, Fail, "does not answer on its own loopback", "were not probed")
}

func TestV10OnKwokNodes(t *testing.T) {
	rs, _ := runV10(t, netCase{net: &fakeNet{}, nodes: []runtime.Object{node("kwok-0", true)}})
	wantStatus(t, rs, NotVerifiable, "kwok node")
}

func TestV10EveryOrderedPairOfTenants(t *testing.T) {
	rs, net := runV10(t, netCase{p: twoTenants(t), net: &fakeNet{}})
	got := bySubject(t, rs)
	if len(got) != 10 {
		t.Errorf("%d results %v, want 4 per tenant and both ordered pairs", len(got), subjects(got))
	}
	for _, pair := range [][2]string{{"agents-team-a", "agents-team-b"}, {"agents-team-b", "agents-team-a"}} {
		want(t, got, pair[0]+" -> "+pair[1], Pass, "a pod of "+pair[0]+" was refused by a pod of "+pair[1])
		if net.tried[pair] < denialStreak {
			t.Errorf("%s -> %s tried %d times, want %d", pair[0], pair[1], net.tried[pair], denialStreak)
		}
	}
	want(t, got, "agents-team-b egress", Pass)

	// One direction open: that pair fails, its reverse still passes.
	open := func(from, to string) bool {
		return onlyControl(from, to) || (from == "agents-team-a" && to == "agents-team-b")
	}
	rs, _ = runV10(t, netCase{p: twoTenants(t), net: &fakeNet{open: open}})
	got = bySubject(t, rs)
	want(t, got, "agents-team-a -> agents-team-b", Fail, "neither agents-team-a's egress nor agents-team-b's ingress policy refuses it")
	want(t, got, "agents-team-b -> agents-team-a", Pass)
}

// throughResolvConf counts the lookups made with no server (through the
// pod's resolv.conf).
func throughResolvConf(asked []string) int {
	n := 0
	for _, a := range asked {
		if a == "" {
			n++
		}
	}
	return n
}

func TestV10ResolvesThroughResolvConf(t *testing.T) {
	empty := "search agents-team-a.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
	rs, net := runV10(t, netCase{net: &fakeNet{resolvConf: empty}})
	want(t, bySubject(t, rs), dnsA, NotVerifiable, "names no nameserver", "search agents-team-a.svc.cluster.local", "answers when asked directly", "kubelet clusterDNS")
	if slices.Contains(net.asked, "") {
		t.Errorf("asked through an empty resolv.conf: %q", net.asked)
	}

	// The pod's own loopback may be asked, once, and says nothing answers
	// there (what a node without clusterDNS gives gVisor pods).
	rs, net = runV10(t, netCase{net: &fakeNet{resolvConf: "search .\nnameserver 127.0.0.1\n"}})
	want(t, bySubject(t, rs), dnsA, NotVerifiable, "names 127.0.0.1, the pod's own loopback (it says: search .; nameserver 127.0.0.1)", "where nothing answers (nslookup: write to '127.0.0.1': Connection refused)")
	if n := throughResolvConf(net.asked); n != 1 {
		t.Errorf("lookups through resolv.conf: %d (%q), want 1", n, net.asked)
	}

	// A nameserver verify cannot tie to the cluster resolver is not queried.
	rs, net = runV10(t, netCase{net: &fakeNet{resolvConf: "nameserver 169.254.20.10\n"}})
	want(t, bySubject(t, rs), dnsA, NotVerifiable, "names 169.254.20.10", "not an address of the cluster resolver")
	if slices.Contains(net.asked, "") {
		t.Errorf("a lookup went through a resolv.conf naming a foreign nameserver: %q", net.asked)
	}

	// The DNS hole closed too.
	rs, _ = runV10(t, netCase{net: &fakeNet{resolverAnswers: func(from string) bool { return isControlNS(from) }}})
	want(t, bySubject(t, rs), dnsA, Fail, "which the DNS rule allows, did not answer")

	rs, _ = runV10(t, netCase{net: &fakeNet{}, noDNS: true})
	want(t, bySubject(t, rs), dnsA, NotVerifiable, "no cluster resolver pod")
}

// A tenant whose spec allows no DNS must be refused by the resolver that
// answers the control client.
func TestV10NoDNSInTheSpec(t *testing.T) {
	p := localPlatform(t)
	p.Tenants[0].Egress.DNS = false
	rs, _ := runV10(t, netCase{p: p, net: &fakeNet{resolverAnswers: isControlNS}})
	want(t, bySubject(t, rs), dnsA, Pass, "refused by the cluster resolver", "answered the control client")

	rs, _ = runV10(t, netCase{p: p, net: &fakeNet{}})
	want(t, bySubject(t, rs), dnsA, Fail, "reached the cluster resolver")
}

// An egress hole the spec itself opens over the control's address is not
// judged either way.
func TestV10SpecAllowedEgressIsNotJudged(t *testing.T) {
	p := localPlatform(t)
	p.Tenants[0].Egress.Allows = append(p.Tenants[0].Egress.Allows, model.EgressAllow{CIDR: "10.213.0.0/16", Ports: []int32{8000, 8080}, Protocol: "TCP"})
	rs, _ := runV10(t, netCase{p: p, net: &fakeNet{open: func(from, to string) bool { return onlyControl(from, to) || isControlNS(to) }}})
	got := bySubject(t, rs)
	want(t, got, egressA, NotVerifiable, "the spec itself lets agents-team-a reach", "NetworkPolicy allow-egress")
	want(t, got, ingressA, Pass)
}

func TestParseConnect(t *testing.T) {
	cases := []struct {
		name           string
		stdout, stderr string
		err            error
		want           attemptOutcome
	}{
		{"greeting", exited(probeGreeting+"\n", 0), "", nil, attemptReached},
		{"timed out", exited("nc: timed out\n", 1), "", nil, attemptRefused},
		{"refused", exited("nc: can't connect to remote host (10.0.0.1): Connection refused\n", 1), "", nil, attemptRefused},
		{"rejected", exited("nc: can't connect to remote host (10.0.0.1): No route to host\n", 1), "", nil, attemptRefused},
		{"exec failed", "", "error: pod not found", errors.New("pods \"x\" not found"), attemptBroken},
		{"exec failed after a refusal was printed", exited("nc: timed out\n", 1), "", errors.New("stream reset"), attemptBroken},
		{"nc not found", exited("sh: nc: not found\n", 127), "", nil, attemptBroken},
		{"no exit status", "nc: timed out\n", "", nil, attemptBroken},
		{"other failure", exited("nc: bad address 'x'\n", 1), "", nil, attemptBroken},
	}
	for _, c := range cases {
		if got := parseConnect(c.stdout, c.stderr, c.err); got.outcome != c.want {
			t.Errorf("%s: outcome %d (%s), want %d", c.name, got.outcome, got.detail, c.want)
		}
	}
	if a := parseConnect(exited("hello\n", 0), "", nil); a.outcome != attemptReached || a.greeted {
		t.Errorf("a connection without the greeting: %+v, want reached, not greeted", a)
	}
}

// A series with a broken attempt between refusals is not a streak, and one
// that only broke is not denied.
func TestRefusedCountsOnlyRefusals(t *testing.T) {
	seq := []attemptOutcome{attemptRefused, attemptRefused, attemptBroken, attemptRefused, attemptRefused, attemptRefused}
	i := 0
	r := refused(context.Background(), time.Now().Add(10*time.Second), func() attempt {
		a := attempt{outcome: seq[i], detail: fmt.Sprint(i)}
		i++
		return a
	})
	if !r.denied || r.attempts != 6 {
		t.Errorf("denied %v after %d attempts, want denied after 6 (the broken one breaks the streak)", r.denied, r.attempts)
	}
	r = refused(context.Background(), time.Now().Add(10*time.Second), func() attempt { return attempt{outcome: attemptBroken, detail: "exec failed"} })
	if r.denied || r.broken != "exec failed" || r.attempts != brokenStreak {
		t.Errorf("only broken attempts: %+v, want not denied after %d", r, brokenStreak)
	}
	// Connections that keep getting through end the series after the hold,
	// not at the deadline: with the deadline an hour off, a series that ran
	// to it would trip the hang guard.
	old := probeTimeouts.hold
	probeTimeouts.hold = time.Second
	defer func() { probeTimeouts.hold = old }()
	r = hangguard.Within(t, time.Minute, "an open path's series with a 1s hold", func() refusal {
		return refused(context.Background(), time.Now().Add(time.Hour), func() attempt { return attempt{outcome: attemptReached, greeted: true} })
	})
	if r.denied || r.reached != r.attempts || r.attempts < 2 {
		t.Errorf("an open path: %+v, want every attempt through, at least two of them (one starts the hold, a later one ends it)", r)
	}
}

func TestSpecAllowsEgress(t *testing.T) {
	p := localPlatform(t)
	tn := p.Tenants[0]
	ctl := controlNamespace()
	target := map[string]string{probeLabel: "target"}
	if rule, ok := specAllowsEgress(p, tn, ctl.Labels, target, "10.213.0.5", probePort); ok {
		t.Errorf("examples/local's policies allow egress to the control target (%s)", rule)
	}
	if _, ok := specAllowsEgress(p, tn, map[string]string{"kubernetes.io/metadata.name": "kube-system"}, map[string]string{"k8s-app": "kube-dns"}, resolverIP, 53); !ok {
		t.Error("the DNS rule does not allow the resolver on port 53")
	}
	tn.Egress.Allows = []model.EgressAllow{{CIDR: "10.213.0.0/24", Ports: []int32{443}}}
	if _, ok := specAllowsEgress(p, tn, ctl.Labels, target, "10.213.0.5", probePort); ok {
		t.Error("an allow on port 443 counted for port 8080")
	}
	tn.Egress.Allows = []model.EgressAllow{{CIDR: "10.213.0.0/24", Ports: []int32{8080}}}
	if _, ok := specAllowsEgress(p, tn, ctl.Labels, target, "10.213.1.5", probePort); ok {
		t.Error("an allow of 10.213.0.0/24 counted for 10.213.1.5")
	}
	if _, ok := specAllowsEgress(p, tn, ctl.Labels, target, "10.213.0.5", probePort); !ok {
		t.Error("an allow of 10.213.0.0/24 port 8080 did not count for 10.213.0.5:8080")
	}
}

func TestControlNamespaceIsMarked(t *testing.T) {
	ns := controlNamespace()
	if !isControlNS(ns.Name) || len(ns.Name) != len(controlNamespacePrefix)+5 {
		t.Errorf("control namespace name %q", ns.Name)
	}
	for k, v := range map[string]string{
		"app.kubernetes.io/managed-by": "paddock", probeNamespaceLabel: "control",
		"pod-security.kubernetes.io/enforce": "restricted", "kubernetes.io/metadata.name": ns.Name,
	} {
		if ns.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, ns.Labels[k], v)
		}
	}
	if other := controlNamespace(); other.Name == ns.Name {
		t.Errorf("two control namespaces named alike: %s", ns.Name)
	}
}

// A control namespace a killed verify left (older than staleControlAge) is deleted
// by the next verify; a young one, maybe another runner's live verify, and any
// namespace not verify's are left alone.
func TestStaleControlNamespacesSwept(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ns := func(name string, age time.Duration, control bool) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if control {
			n.Labels = map[string]string{probeNamespaceLabel: "control"}
		}
		return n
	}
	kube := fake.NewClientset(
		ns(controlNamespacePrefix+"old01", 2*time.Hour, true),
		ns(controlNamespacePrefix+"new01", 5*time.Minute, true),
		ns("agents-team-a", 48*time.Hour, false),
		ns("someone-else", 48*time.Hour, true),
	)
	v := &Verifier{kube: kube}
	v.sweepStaleControls(context.Background(), now)
	left, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range left.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	want := []string{"agents-team-a", controlNamespacePrefix + "new01", "someone-else"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("after the sweep: %v, want %v", names, want)
	}
}
