// The network probe (V10): traffic between pods verify starts itself, judged
// against a control no policy touches.
//
// verify creates a namespace of its own (paddock-verify-control-<random>, no
// NetworkPolicy in it) with a control target and a control client, and a
// target and a client in each fenced tenant namespace. A refusal proves a
// policy only when the same kind of connection goes through where no policy
// applies, so every refusal below is read against the control client
// reaching the control target. Probes send traffic only to these pods and to
// the cluster resolver; the control namespace and every probe pod are
// deleted before the check returns.

package verify

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const (
	// controlNamespacePrefix names verify's policy-free namespace; a random
	// suffix keeps two runs apart.
	controlNamespacePrefix = "paddock-verify-control-"
	// probeNamespaceLabel marks a namespace verify created for its probes.
	probeNamespaceLabel = "paddock.dev/verify-probe"
	// probeExitMarker precedes the exit status of the probed command in the
	// probe's output: without it a shell that never ran the command and a
	// command that failed look alike.
	probeExitMarker = "paddock-probe-exit="
	// probeConcurrency bounds the connections probed at once.
	probeConcurrency = 8
)

// attemptOutcome is what one probe attempt showed.
type attemptOutcome int

const (
	// attemptReached: the connection (or the DNS query) got an answer.
	attemptReached attemptOutcome = iota
	// attemptRefused: the probe ran and the connection timed out or was
	// refused.
	attemptRefused
	// attemptBroken: the probe did not run, or its output cannot be read (an
	// exec that failed, a missing pod, no nc in the image). Never a refusal.
	attemptBroken
)

type attempt struct {
	outcome attemptOutcome
	// greeted: the answer was the probe target's greeting (a connection
	// that got no greeting reached something, but not the target).
	greeted bool
	detail  string // what the probe printed, in short
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// connectCommand asks nc to connect to ip:probePort and prints nc's exit
// status after the marker.
func connectCommand(ip string) []string {
	return []string{"sh", "-c", fmt.Sprintf("nc -w 2 %s %d </dev/null 2>&1; echo %s$?", shellQuote(ip), probePort, probeExitMarker)}
}

// serveCommand answers every connection on probePort with the greeting, from
// one listening socket that never closes (-ll), so a refusal cannot come from
// a gap between two listeners.
func serveCommand() []string {
	return []string{"nc", "-ll", "-p", strconv.Itoa(probePort), "-e", "echo", probeGreeting}
}

// splitExit separates a probe's output from the exit status after the
// marker; ok is false when no status was printed (the shell never got there).
func splitExit(out string) (body string, status int, ok bool) {
	i := strings.LastIndex(out, probeExitMarker)
	if i < 0 {
		return out, 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(firstLine(out[i+len(probeExitMarker):])))
	if err != nil {
		return out, 0, false
	}
	return out[:i], n, true
}

// commandMissing reports output in which the shell says a command does not
// exist or cannot run.
func commandMissing(status int, body string) bool {
	return status == 126 || status == 127 || strings.Contains(body, ": not found")
}

// readProbe reads a probe command's output up to its exit status; broken is
// set when the probe did not run as a probe (exec failed, no status, the
// tool missing from the image), which is never a refusal.
func readProbe(tool, stdout, stderr string, err error) (body string, status int, broken *attempt) {
	if err != nil {
		return "", 0, &attempt{outcome: attemptBroken, detail: strings.TrimSpace("exec: " + err.Error() + " " + firstLine(stderr))}
	}
	body, status, ok := splitExit(stdout)
	switch {
	case !ok:
		return "", 0, &attempt{outcome: attemptBroken, detail: fmt.Sprintf("no exit status in the probe's output %q %s", firstLine(stdout), firstLine(stderr))}
	case commandMissing(status, body):
		return "", 0, &attempt{outcome: attemptBroken, detail: fmt.Sprintf("%s cannot run in the probe image (exit %d: %s)", tool, status, firstLine(strings.TrimSpace(body)))}
	}
	return body, status, nil
}

// parseConnect reads one connection attempt (connectCommand's output).
func parseConnect(stdout, stderr string, err error) attempt {
	body, status, broken := readProbe("nc", stdout, stderr, err)
	if broken != nil {
		return *broken
	}
	said := strings.TrimSpace(body)
	if status == 0 {
		return attempt{outcome: attemptReached, greeted: strings.Contains(body, probeGreeting), detail: firstLine(said)}
	}
	for _, refusal := range []string{"timed out", "Connection refused", "No route to host", "Host is unreachable"} {
		if strings.Contains(body, refusal) {
			return attempt{outcome: attemptRefused, detail: firstLine(said)}
		}
	}
	return attempt{outcome: attemptBroken, detail: fmt.Sprintf("nc exited %d without a refusal: %s", status, firstLine(said))}
}

// connect tries one connection from client to ip:probePort.
func (v *Verifier) connect(ctx context.Context, client *corev1.Pod, ip string) attempt {
	stdout, stderr, err := v.exec.Exec(ctx, client.Namespace, client.Name, "probe", connectCommand(ip))
	return parseConnect(stdout, stderr, err)
}

// nslookupCommand asks for name through server, or through the resolvers
// /etc/resolv.conf names when server is "", and prints nslookup's status.
func nslookupCommand(name, server string) []string {
	cmd := "nslookup " + shellQuote(name)
	if server != "" {
		cmd += " " + shellQuote(server)
	}
	return []string{"sh", "-c", cmd + " 2>&1; echo " + probeExitMarker + "$?"}
}

// parseLookup reads one DNS query (nslookupCommand's output).
func parseLookup(stdout, stderr string, err error) attempt {
	body, status, broken := readProbe("nslookup", stdout, stderr, err)
	if broken != nil {
		return *broken
	}
	said := strings.TrimSpace(body)
	switch {
	case dnsAnswered(body):
		return attempt{outcome: attemptReached, greeted: true, detail: firstLine(said)}
	case strings.Contains(body, "timed out") || strings.Contains(body, "no servers could be reached") || strings.Contains(body, "Connection refused"):
		return attempt{outcome: attemptRefused, detail: firstLine(said)}
	}
	return attempt{outcome: attemptBroken, detail: fmt.Sprintf("nslookup exited %d without an answer or a timeout: %s", status, firstLine(said))}
}

// dnsAnswered reads busybox nslookup's output: "Name:" lines or NXDOMAIN mean
// the server answered; a timeout means it was never reached.
func dnsAnswered(out string) bool {
	if strings.Contains(out, "timed out") || strings.Contains(out, "no servers could be reached") {
		return false
	}
	return strings.Contains(out, "Name:") || strings.Contains(out, "NXDOMAIN")
}

func (v *Verifier) lookup(ctx context.Context, client *corev1.Pod, server string) attempt {
	stdout, stderr, err := v.exec.Exec(ctx, client.Namespace, client.Name, "probe", nslookupCommand(v.opts.DNSProbeName, server))
	return parseLookup(stdout, stderr, err)
}

// refusal is what a series of attempts that must be refused showed.
type refusal struct {
	denied   bool // denialStreak refusals in a row
	reached  int  // attempts that got through
	attempts int
	broken   string // the last attempt that did not run; "" when all ran
	refusal  string // the last refusal, in nc's words
}

// brokenStreak is how many attempts in a row that did not run end a series:
// a probe that cannot run will not start running.
const brokenStreak = 3

// refused tries until denialStreak refusals in a row or the deadline. An
// attempt that got through resets the streak (a pod just started may be
// reached before the policy is applied to it), and connections getting
// through without a refusal for probeTimeouts.hold end the series; one that
// did not run resets the streak too: it is never a refusal.
func refused(ctx context.Context, deadline time.Time, try func() attempt) refusal {
	var r refusal
	streak, broken := 0, 0
	var through time.Time // since when connections get through
	for time.Now().Before(deadline) && ctx.Err() == nil {
		r.attempts++
		a := try()
		if a.outcome != attemptReached {
			through = time.Time{}
		}
		switch a.outcome {
		case attemptRefused:
			broken = 0
			r.refusal = a.detail
			if streak++; streak >= denialStreak {
				r.denied = true
				return r
			}
		case attemptReached:
			streak, broken = 0, 0
			r.reached++
			if through.IsZero() {
				through = time.Now()
			} else if time.Since(through) >= probeTimeouts.hold {
				return r
			}
			// Give a policy being applied to a new pod time to land.
			sleep(ctx, 500*time.Millisecond)
		default:
			streak = 0
			r.broken = a.detail
			if broken++; broken >= brokenStreak {
				return r
			}
			sleep(ctx, time.Second)
		}
	}
	return r
}

// reachedTarget tries until the target's greeting comes back (true) or the
// deadline; it returns the last attempt.
func reachedTarget(ctx context.Context, deadline time.Time, try func() attempt) (bool, int, attempt) {
	n := 0
	var last attempt
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n++
		last = try()
		if last.outcome == attemptReached && last.greeted {
			return true, n, last
		}
		sleep(ctx, time.Second)
	}
	return false, n, last
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// probeSide is a target and a client in one namespace: a tenant's, or the
// control's.
type probeSide struct {
	ns     string
	tenant model.Tenant // zero for the control
	target *corev1.Pod
	client *corev1.Pod
	err    error // the side could not be probed
}

// probeRun holds what one network probe created, to delete it.
type probeRun struct {
	v       *Verifier
	mu      sync.Mutex
	pods    []*corev1.Pod
	control string // the control namespace, once created
}

func (r *probeRun) track(p *corev1.Pod) {
	if p == nil || p.Name == "" {
		return
	}
	r.mu.Lock()
	r.pods = append(r.pods, p)
	r.mu.Unlock()
}

// cleanup deletes every probe pod and the control namespace, whatever the
// check's outcome and even when its context was cancelled.
func (r *probeRun) cleanup() {
	r.v.deleteProbes(r.pods...)
	if r.control == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = r.v.kube.CoreV1().Namespaces().Delete(ctx, r.control, metav1.DeleteOptions{})
}

// controlNamespace is verify's policy-free namespace: Pod Security
// restricted (the probe pods are hardened like sandboxes), no
// NetworkPolicy, marked as verify's.
func controlNamespace() *corev1.Namespace {
	lbls := manifests.PSSLabels("restricted")
	lbls["app.kubernetes.io/managed-by"] = "paddock"
	lbls[probeNamespaceLabel] = "control"
	name := controlNamespacePrefix + utilrand.String(5)
	// The API server sets this label itself; set here, policy peers can be
	// matched against the namespace before it is created.
	lbls["kubernetes.io/metadata.name"] = name
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

// staleControlAge is how old a control namespace must be before a later verify
// deletes it: far longer than any verify runs, so a run on another machine is
// never disturbed, yet a killed run's namespace does not stay for good.
const staleControlAge = time.Hour

// sweepStaleControls deletes control namespaces a killed verify left behind
// (a kill -9 runs no cleanup). Best effort: a failure here changes no check.
func (v *Verifier) sweepStaleControls(ctx context.Context, now time.Time) {
	nss, err := v.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: probeNamespaceLabel + "=control"})
	if err != nil {
		return
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, controlNamespacePrefix) && ns.DeletionTimestamp == nil && now.Sub(ns.CreationTimestamp.Time) > staleControlAge {
			_ = v.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
}

// startSide starts a side's target and client at once.
func (r *probeRun) startSide(ctx context.Context, s *probeSide, runtimeClass string) {
	var wg sync.WaitGroup
	var targetErr, clientErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.target, targetErr = r.v.startProbe(ctx, probePod(s.ns, "target", r.v.opts.ProbeImage, runtimeClass, serveCommand()))
		r.track(s.target)
	}()
	go func() {
		defer wg.Done()
		s.client, clientErr = r.v.startProbe(ctx, probePod(s.ns, "client", r.v.opts.ProbeImage, runtimeClass, []string{"sleep", "3600"}))
		r.track(s.client)
	}()
	wg.Wait()
	switch {
	case targetErr != nil:
		s.err = probeStartErr{"target", targetErr}
	case clientErr != nil:
		s.err = probeStartErr{"client", clientErr}
	}
}

// probeStartErr is a probe pod that did not start.
type probeStartErr struct {
	role string
	err  error
}

func (e probeStartErr) Error() string { return e.role + " probe: " + e.err.Error() }

// onFakeNode reports whether err says a probe pod landed on a kwok node.
func onFakeNode(err error) (errNoRealNode, bool) {
	if se, ok := err.(probeStartErr); ok {
		err = se.err
	}
	nr, ok := err.(errNoRealNode)
	return nr, ok
}

// answersLoopback: the target must answer on its own loopback, where no
// policy applies, or no refusal of it proves anything.
func (v *Verifier) answersLoopback(ctx context.Context, s *probeSide) {
	ok, n, last := reachedTarget(ctx, time.Now().Add(probeTimeouts.loopback), func() attempt { return v.connect(ctx, s.target, "127.0.0.1") })
	if !ok {
		s.err = fmt.Errorf("the probe's target pod %s does not answer on its own loopback in %d attempts (%s): the probe cannot judge the policy", s.target.Name, n, describe(last))
	}
}

func describe(a attempt) string {
	switch {
	case a.outcome == attemptReached && !a.greeted:
		return "connected, but no greeting: " + a.detail
	case a.detail == "":
		return "no output"
	}
	return a.detail
}

// probeControl shows the control target reachable from the control client,
// where no policy applies; why says what failed.
func (v *Verifier) probeControl(ctx context.Context, control *probeSide, timeout time.Duration) (ok bool, why string) {
	if control.err != nil {
		return false, fmt.Sprintf("the control pods in %s cannot show what no policy lets through: %v", control.ns, control.err)
	}
	ip := control.target.Status.PodIP
	ok, n, last := reachedTarget(ctx, time.Now().Add(timeout), func() attempt { return v.connect(ctx, control.client, ip) })
	if !ok {
		return false, fmt.Sprintf("the control client could not reach the control target (%s:%d) in %s, where no policy applies, in %d attempts (%s)", ip, probePort, control.ns, n, describe(last))
	}
	return true, ""
}

// judgment is one connection that every policy in its way must refuse.
type judgment struct {
	subject  string
	from, to string     // who connects to whom, as the report says it
	hole     string     // what a connection that got through shows
	owner    *probeSide // the tenant whose result it is
	client   *corev1.Pod
	ip       string
	port     int32
	// control says what the control showed, for the report; "" for the
	// control client reaching the control target.
	control string
	// unjudged: the spec itself lets this connection through, so it proves
	// nothing either way.
	unjudged string
	res      refusal
}

func (j *judgment) result(controlOK bool, controlWhy string) Result {
	port := j.port
	if port == 0 {
		port = probePort
	}
	target := fmt.Sprintf("%s (%s:%d)", j.to, j.ip, port)
	shown := j.control
	if shown == "" {
		shown = "the control client reached the control target where no policy applies"
	}
	switch {
	case j.unjudged != "":
		return notVerifiable(j.subject, "%s", j.unjudged)
	case j.res.reached > 0 && !j.res.denied:
		return fail(j.subject, "%s reached %s in %d of %d attempts: %s", j.from, target, j.res.reached, j.res.attempts, j.hole)
	case !j.res.denied && j.res.broken != "":
		return fail(j.subject, "%s -> %s: the probe did not run (%s), and a probe that did not run is no refusal", j.from, target, j.res.broken)
	case !j.res.denied:
		return fail(j.subject, "%s -> %s: no %d refusals in a row within %s (%d attempts; last: %s)", j.from, target, denialStreak, probeTimeouts.reach, j.res.attempts, j.res.refusal)
	case !controlOK:
		return notVerifiable(j.subject, "%s was refused by %s %d times in a row, but that proves nothing: %s", j.from, target, denialStreak, controlWhy)
	}
	early := ""
	if j.res.reached > 0 {
		early = fmt.Sprintf("; %d earlier attempt(s) got through while the policy was being applied to the new pod", j.res.reached)
	}
	return pass(j.subject, "%s was refused by %s %d times in a row (%s), while %s%s", j.from, target, denialStreak, j.res.refusal, shown, early)
}

// checkNetworkPolicyEnforced proves each fenced tenant's policies with
// traffic, against the policy-free control: a client of the tenant must be
// refused by the control target (egress), the control client by the
// tenant's target (ingress), a client by a target of its own namespace (pod
// to pod) and of every other tenant (each ordered pair); each refusal three
// times in a row, while the control client reaches the control target. And
// the tenant's pods must resolve a name as an agent would, through their
// /etc/resolv.conf, at the cluster resolver (the DNS rule's one hole). A
// control that is only stored, not enforced, fails here.
func checkNetworkPolicyEnforced(ctx context.Context, v *Verifier) []Result {
	if v.opts.NoProbes {
		return []Result{notVerifiable("cluster", "runtime probes are off (--no-probes): nothing shows whether the network policies are enforced")}
	}
	var out []Result
	var fenced []model.Tenant
	for _, t := range v.p.Tenants {
		if t.Egress.Unrestricted {
			out = append(out, fail(t.Namespace, "default-deny waived in the spec: nothing to enforce"))
			continue
		}
		fenced = append(fenced, t)
	}
	if len(fenced) == 0 {
		return out
	}
	return append(out, v.probeNetwork(ctx, fenced)...)
}

// eachTenant is one result per tenant, for a failure that stops the probe.
func eachTenant(tenants []model.Tenant, r func(ns string) Result) []Result {
	var out []Result
	for _, t := range tenants {
		out = append(out, r(t.Namespace))
	}
	return out
}

func (v *Verifier) probeNetwork(ctx context.Context, tenants []model.Tenant) []Result {
	run := &probeRun{v: v}
	defer run.cleanup()

	v.sweepStaleControls(ctx, time.Now())
	ns := controlNamespace()
	if _, err := v.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: "paddock-verify"}); err != nil {
		return eachTenant(tenants, func(tns string) Result {
			return fail(tns, "creating verify's control namespace %s, against which refusals are judged: %v", ns.Name, err)
		})
	}
	run.control = ns.Name

	// The control pods run on the first tenant's runtime class: the
	// same nodes and network path as the tenants' pods.
	control := &probeSide{ns: ns.Name}
	sides := []*probeSide{control}
	for _, t := range tenants {
		sides = append(sides, &probeSide{ns: t.Namespace, tenant: t})
	}
	controlClass := tenantRuntimeClass(tenants[0])
	if controlClass == "" {
		if rc := probeRuntimeClass(v.p, tenants[0]); rc != nil {
			controlClass = *rc
		}
	}
	parallel(len(sides), len(sides), func(i int) {
		s := sides[i]
		rc := controlClass
		if s != control {
			rc = tenantRuntimeClass(s.tenant)
		}
		run.startSide(ctx, s, rc)
	})
	if nr, ok := onFakeNode(control.err); ok {
		return eachTenant(tenants, func(tns string) Result {
			return notVerifiable(tns, "the probe pods were scheduled, but %s: policy enforcement needs a node that runs pods", nr.Error())
		})
	}
	if control.err != nil {
		return eachTenant(tenants, func(tns string) Result {
			return fail(tns, "the control pods in %s (no policy there), against which refusals are judged, did not run: %v", control.ns, control.err)
		})
	}
	parallel(len(sides), probeConcurrency, func(i int) {
		if sides[i].err == nil {
			v.answersLoopback(ctx, sides[i])
		}
	})
	controlOK, controlWhy := v.probeControl(ctx, control, probeTimeouts.reach)

	resolvers, resolverErr := v.resolverAddresses(ctx)
	var judgments []*judgment
	var dns []*dnsProbe
	var named []*fqdnProbe
	ready := sides[1:]
	for _, a := range ready {
		if a.err != nil {
			continue
		}
		judgments = append(judgments, v.tenantJudgments(a, control, ns)...)
		for _, b := range ready {
			if b == a || b.err != nil {
				continue
			}
			judgments = append(judgments, &judgment{
				subject: a.ns + " -> " + b.ns, from: "a pod of " + a.ns, to: "a pod of " + b.ns,
				hole:  fmt.Sprintf("neither %s's egress nor %s's ingress policy refuses it", a.ns, b.ns),
				owner: a, client: a.client, ip: b.target.Status.PodIP,
			})
		}
		dns = append(dns, &dnsProbe{side: a, control: control})
		if len(a.tenant.Egress.FQDNs) > 0 {
			named = append(named, &fqdnProbe{side: a, control: control})
		}
	}
	for _, d := range dns {
		d.resolvers, d.resolverErr = resolvers, resolverErr
	}
	// Every connection at once (they are independent), bounded, and the
	// DNS and named-egress probes beside them.
	parallel(len(judgments)+len(dns)+len(named), probeConcurrency, func(i int) {
		if i < len(judgments) {
			j := judgments[i]
			if j.unjudged == "" {
				j.res = refused(ctx, time.Now().Add(probeTimeouts.reach), func() attempt { return v.connect(ctx, j.client, j.ip) })
			}
			return
		}
		if i -= len(judgments); i < len(dns) {
			dns[i].result = v.probeDNS(ctx, dns[i])
			return
		}
		f := named[i-len(dns)]
		f.results = v.probeFQDNs(ctx, f)
	})
	// The control must still answer after the refusals: a target that died
	// meanwhile would have refused everything.
	if controlOK {
		if ok, why := v.probeControl(ctx, control, probeTimeouts.loopback); !ok {
			controlOK, controlWhy = false, "after the refusals, "+why
		}
	}

	var out []Result
	for _, s := range ready {
		if nr, ok := onFakeNode(s.err); ok {
			out = append(out, notVerifiable(s.ns, "the probe pods were scheduled, but %s: policy enforcement needs a node that runs pods", nr.Error()))
			continue
		}
		if s.err != nil {
			out = append(out, fail(s.ns, "%v (its directions, pod to pod and its pairs with other tenants were not probed)", s.err))
			continue
		}
		for _, j := range judgments {
			if j.owner == s {
				out = append(out, j.result(controlOK, controlWhy))
			}
		}
		for _, d := range dns {
			if d.side == s {
				out = append(out, d.result)
			}
		}
		for _, f := range named {
			if f.side == s {
				out = append(out, f.results...)
			}
		}
	}
	return out
}

// tenantJudgments are a tenant's own connections: its egress to the
// control target, its ingress from the control client, and pod to pod.
func (v *Verifier) tenantJudgments(s, control *probeSide, controlNS *corev1.Namespace) []*judgment {
	rc := tenantRuntimeClass(s.tenant)
	podToPod := "pod to pod"
	if rc != "" {
		podToPod = "pod to pod (" + rc + ")"
	}
	egress := &judgment{
		subject: s.ns + " egress", from: "a pod of " + s.ns, to: "the control target in " + control.ns,
		hole: s.ns + "'s egress policy does not refuse it", owner: s, client: s.client, ip: control.target.Status.PodIP,
	}
	if rule, ok := specAllowsEgress(v.p, s.tenant, controlNS.Labels, control.target.Labels, control.target.Status.PodIP, probePort); ok {
		egress.unjudged = fmt.Sprintf("the spec itself lets %s reach %s:%d (%s), so the control target cannot show the egress fence", s.ns, control.target.Status.PodIP, probePort, rule)
	}
	return []*judgment{
		egress,
		{
			subject: s.ns + " ingress", from: "the control client in " + control.ns, to: "a pod of " + s.ns,
			hole: s.ns + "'s ingress policy does not refuse it", owner: s, client: control.client, ip: s.target.Status.PodIP,
		},
		{
			subject: s.ns + " " + podToPod, from: "a pod of " + s.ns, to: "another pod of the namespace",
			hole: s.ns + "'s default-deny does not refuse it", owner: s, client: s.client, ip: s.target.Status.PodIP,
		},
	}
}

// parallel runs f(0..n-1), at most limit at once, and waits for all.
func parallel(n, limit int, f func(i int)) {
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// specAllowsEgress reports whether the policies the spec builds for t let its
// pods connect to a pod with podLabels in a namespace with nsLabels at
// ip:port (TCP), and by which rule.
func specAllowsEgress(p *model.Platform, t model.Tenant, nsLabels, podLabels map[string]string, ip string, port int32) (string, bool) {
	pols, err := manifests.NetworkPolicies(p, t)
	if err != nil {
		return "", false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return "", false
	}
	for _, np := range pols {
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		for i, r := range np.Spec.Egress {
			if portsAllow(r.Ports, port) && peersAllow(r.To, np.Namespace, nsLabels, podLabels, addr) {
				return fmt.Sprintf("NetworkPolicy %s, egress rule %d", np.Name, i), true
			}
		}
	}
	return "", false
}

func portsAllow(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		// A named port matches only a container port of that name; the
		// probe target names none.
		if p.Port.Type != 0 {
			continue
		}
		lo, hi := p.Port.IntVal, p.Port.IntVal
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

func peersAllow(peers []networkingv1.NetworkPolicyPeer, policyNS string, nsLabels, podLabels map[string]string, addr netip.Addr) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock != nil {
			if cidrContains(peer.IPBlock.CIDR, addr) && !slices.ContainsFunc(peer.IPBlock.Except, func(c string) bool { return cidrContains(c, addr) }) {
				return true
			}
			continue
		}
		if peer.NamespaceSelector == nil && nsLabels["kubernetes.io/metadata.name"] != policyNS {
			continue // a pod selector alone selects in the policy's namespace
		}
		if selects(peer.NamespaceSelector, nsLabels) && selects(peer.PodSelector, podLabels) {
			return true
		}
	}
	return false
}

func cidrContains(cidr string, addr netip.Addr) bool {
	pfx, err := netip.ParsePrefix(cidr)
	return err == nil && pfx.Contains(addr)
}

// selects: a nil selector selects everything, as in a policy peer.
func selects(sel *metav1.LabelSelector, lbls map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(lbls))
}
