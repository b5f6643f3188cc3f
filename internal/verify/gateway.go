// The egress gateway check (V16): from inside a ready sandbox, the tenant's
// gateway is its route out and the only holder of the keys.

package verify

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const (
	// gatewayMarker starts the lines the gateway probe's script prints
	// around each probe's output.
	gatewayMarker = "@@paddock-verify "
	// gatewayUnlistedHost is a name no gateway lists (.invalid, RFC 6761):
	// the gateway must refuse it before any lookup.
	gatewayUnlistedHost = "paddock-verify-unlisted.invalid"
	// gatewayLiteral is an IP literal of TEST-NET-1 (RFC 5737): the gateway
	// refuses any literal before dialing, so nothing is sent to it.
	gatewayLiteral = "192.0.2.1"
	// minKeyLength: shorter credential values are not looked for in the
	// sandbox's environment, where they could match by chance.
	minKeyLength = 8
)

// gatewayScript is what V16 runs in a sandbox: each probe's output between
// a begin line and its exit status. Through the gateway (its Service's
// address, host and port, used as an HTTP proxy, as any client with
// http_proxy set uses it): an unlisted host, an IP literal and each
// destination; around it: a TCP connection to each destination; then every
// process's environment.
//
// The answer's headers must be seen, refusals included, to tell the
// gateway's own answer from a destination's: curl shows them, and so does
// nc given the request by hand. busybox wget shows no header of an error
// answer, so it is not used.
func gatewayScript(gwHost string, gwPort int32, dests []model.GatewayDestination) string {
	var b strings.Builder
	proxy := "http://" + net.JoinHostPort(gwHost, strconv.Itoa(int(gwPort))) // brackets an IPv6 address
	fmt.Fprintf(&b, "GWHOST=%s; GWPORT=%d; GWPROXY=%s\n", shellQuote(gwHost), gwPort, shellQuote(proxy))
	b.WriteString(`have() { command -v "$1" >/dev/null 2>&1; }
# via HOST[:PORT] WAIT: GET http://HOST/ through the gateway; with nc the
# request stays open WAIT seconds for the answer (nc ends when its input does).
via() {
  if have curl; then curl -sS -D - -o /dev/null --max-time 20 -x "$GWPROXY" "http://$1/" 2>&1
  elif have nc; then
    { printf 'GET http://%s/ HTTP/1.1\r\nHost: %s\r\nUser-Agent: paddock-verify\r\nConnection: close\r\n\r\n' "$1" "$1"; sleep "$2"; } |
      nc -w "$(($2 + 2))" "$GWHOST" "$GWPORT" 2>&1
  else echo "neither curl nor nc in the image"; return 127; fi
}
# direct HOST PORT: succeeds when a TCP connection to HOST:PORT is made
# without the gateway (curl: any answer, TLS included, means it connected).
direct() {
  if have nc; then nc -w 3 "$1" "$2" </dev/null 2>&1
  elif have curl; then curl -sS -k -o /dev/null --max-time 5 --noproxy '*' "https://$1:$2/" 2>&1
    case $? in 6|7|28) return 1;; *) return 0;; esac
  else echo "neither nc nor curl in the image"; return 127; fi
}
`)
	probe := func(name, cmd string) {
		fmt.Fprintf(&b, "echo '%sbegin %s'; %s; echo \"%sexit $?\"\n", gatewayMarker, name, cmd, gatewayMarker)
	}
	// The gateway refuses these itself, at once; a destination answers
	// through it within a few seconds.
	probe("unlisted", "via "+shellQuote(gatewayUnlistedHost)+" 2")
	probe("literal", "via "+shellQuote(gatewayLiteral)+" 2")
	for i, d := range dests {
		port := strconv.Itoa(int(d.Port))
		probe("listed "+strconv.Itoa(i), "via "+shellQuote(net.JoinHostPort(d.Host, port))+" 6")
		probe("direct "+strconv.Itoa(i), "direct "+shellQuote(d.Host)+" "+port)
	}
	probe("environ", `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'`)
	return b.String()
}

// gatewayProbe is one probe's output and exit status.
type gatewayProbe struct {
	out  string
	exit int
	ran  bool
}

// parseGatewayProbes splits the script's output by probe name.
func parseGatewayProbes(stdout string) map[string]gatewayProbe {
	out := map[string]gatewayProbe{}
	var name string
	var body strings.Builder
	for line := range strings.SplitSeq(stdout, "\n") {
		rest, ok := strings.CutPrefix(line, gatewayMarker)
		switch {
		case ok && strings.HasPrefix(rest, "begin "):
			name = strings.TrimPrefix(rest, "begin ")
			body.Reset()
		case ok && strings.HasPrefix(rest, "exit ") && name != "":
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(rest, "exit ")))
			out[name] = gatewayProbe{out: body.String(), exit: n, ran: err == nil}
			name = ""
		case name != "":
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	return out
}

var (
	httpStatusLine = regexp.MustCompile(`HTTP/[0-9.]+\s+([0-9]{3})`)
	refusalLine    = regexp.MustCompile(`(?im)^\s*` + regexp.QuoteMeta(gateway.RefusalHeader) + `:\s*(.*?)\s*$`)
)

// gatewayAnswer is what an HTTP probe through the gateway got back.
type gatewayAnswer struct {
	status  int    // 0: no HTTP answer
	refusal string // the gateway's own reason; "" for an answer it relayed
	missing bool   // no HTTP client that ran to an answer: nothing shown
	detail  string // the first line, when there was no answer
}

func readGatewayAnswer(p gatewayProbe) gatewayAnswer {
	if p.ran && commandMissing(p.exit, p.out) {
		return gatewayAnswer{missing: true, detail: firstLine(strings.TrimSpace(p.out))}
	}
	var a gatewayAnswer
	if m := httpStatusLine.FindStringSubmatch(p.out); m != nil {
		a.status, _ = strconv.Atoi(m[1])
	}
	if m := refusalLine.FindStringSubmatch(p.out); m != nil {
		a.refusal = m[1]
	}
	if a.status == 0 {
		a.detail = firstLine(strings.TrimSpace(p.out))
		switch {
		case !p.ran:
			a.detail, a.missing = "the probe did not finish", true
		case p.exit >= 128:
			// Killed by a signal: the client crashed, or timeout ended it.
			// Either way it proves nothing about the gateway.
			a.detail, a.missing = fmt.Sprintf("the HTTP client ended by signal %d: %s", p.exit-128, a.detail), true
		}
	}
	return a
}

// checkEgressGateway proves each tenant's egress gateway live from inside a
// ready sandbox (V16).
func checkEgressGateway(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		if t.EgressGateway == nil {
			continue
		}
		subject := t.Namespace + "/" + manifests.GatewayName
		if v.opts.NoProbes {
			out = append(out, notVerifiable(subject, "runtime probes are off (--no-probes)"))
			continue
		}
		out = append(out, v.proveGateway(ctx, t, subject))
	}
	return out
}

func (v *Verifier) proveGateway(ctx context.Context, t model.Tenant, subject string) Result {
	pod, why, err := v.gatewayVantage(ctx, t)
	if err != nil {
		return fail(subject, "%v", err)
	}
	if pod == nil {
		return notVerifiable(subject, "%s", why)
	}
	gw := t.EgressGateway
	var problems, unshown, held []string

	// By the pod's spec: no env, envFrom or volume of the sandbox reads a
	// Secret the gateway injects.
	if refs := podSecretRefs(pod, t.GatewayCredentialSecrets()); len(refs) > 0 {
		problems = append(problems, fmt.Sprintf("sandbox %s reads the gateway's credential Secret through %s", pod.Name, strings.Join(refs, ", ")))
	}

	// The Service by its address: the name is the cluster resolver's to
	// answer, and the local stack's resolver knows no Services.
	svc, err := v.kube.CoreV1().Services(t.Namespace).Get(ctx, manifests.GatewayName, metav1.GetOptions{})
	if err != nil {
		return fail(subject, "the gateway's Service: %s", shortErr(err))
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return fail(subject, "the gateway's Service has no cluster address (%q)", svc.Spec.ClusterIP)
	}
	gatewayURL := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(model.GatewayListenPort)))
	stdout, stderr, err := v.exec.Exec(ctx, t.Namespace, pod.Name, pod.Spec.Containers[0].Name, []string{"sh", "-c", gatewayScript(svc.Spec.ClusterIP, model.GatewayListenPort, gw.Destinations)})
	if err != nil {
		return notVerifiable(subject, "exec into sandbox %s: %v %s (the image needs sh, and curl or nc)", pod.Name, err, firstLine(stderr))
	}
	probes := parseGatewayProbes(stdout)

	for _, c := range []struct{ probe, what string }{
		{"unlisted", "an unlisted host"},
		{"literal", "an IP literal"},
	} {
		a := readGatewayAnswer(probes[c.probe])
		switch {
		case a.missing:
			unshown = append(unshown, c.what+" through the gateway ("+a.detail+")")
		case a.status == 0:
			problems = append(problems, fmt.Sprintf("%s: no answer from the gateway at %s (%s)", c.what, gatewayURL, a.detail))
		case a.refusal == "":
			problems = append(problems, fmt.Sprintf("%s was answered (%d), not refused by the gateway", c.what, a.status))
		default:
			held = append(held, fmt.Sprintf("%s refused by the gateway (%d)", c.what, a.status))
		}
	}
	for i, d := range gw.Destinations {
		hp := net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port)))
		a := readGatewayAnswer(probes["listed "+strconv.Itoa(i)])
		switch {
		case a.missing:
			unshown = append(unshown, hp+" through the gateway ("+a.detail+")")
		case a.status == 0:
			problems = append(problems, fmt.Sprintf("%s: no answer from the gateway (%s)", hp, a.detail))
		case a.refusal != "":
			problems = append(problems, fmt.Sprintf("%s is listed, but the gateway answered %d: %s", hp, a.status, a.refusal))
		default:
			held = append(held, fmt.Sprintf("%s answered through the gateway (%d)", hp, a.status))
		}
		direct := probes["direct "+strconv.Itoa(i)]
		switch {
		case !direct.ran:
			unshown = append(unshown, "the direct route to "+hp+" (the probe did not finish)")
		case commandMissing(direct.exit, direct.out):
			unshown = append(unshown, "the direct route to "+hp+" (neither nc nor curl in the image)")
		case direct.exit == 0:
			problems = append(problems, fmt.Sprintf("sandbox %s connected to %s directly, around the gateway", pod.Name, hp))
		default:
			held = append(held, "the direct route to "+hp+" refused")
		}
	}

	environ := probes["environ"]
	keys, unread := v.gatewayKeys(ctx, t)
	unshown = append(unshown, unread...)
	switch {
	case !environ.ran || strings.TrimSpace(environ.out) == "":
		unshown = append(unshown, "the sandbox's process environments (none could be read)")
	case len(keys) > 0:
		var found []string
		for _, k := range keys {
			if strings.Contains(environ.out, k.value) {
				found = append(found, k.name)
			}
		}
		if len(found) > 0 {
			problems = append(problems, fmt.Sprintf("a process environment in sandbox %s holds the key of %s", pod.Name, strings.Join(found, ", ")))
		} else {
			held = append(held, fmt.Sprintf("no process environment holds any of the gateway's %d key(s)", len(keys)))
		}
	}

	switch {
	case len(problems) > 0:
		if len(held) > 0 {
			return fail(subject, "from sandbox %s: %s; held: %s", pod.Name, strings.Join(problems, "; "), strings.Join(held, ", "))
		}
		return fail(subject, "from sandbox %s: %s", pod.Name, strings.Join(problems, "; "))
	case len(unshown) > 0:
		return notVerifiable(subject, "from sandbox %s: not shown: %s; held: %s", pod.Name, strings.Join(unshown, ", "), strings.Join(held, ", "))
	}
	return pass(subject, "from sandbox %s: %s", pod.Name, strings.Join(held, ", "))
}

// gatewayVantage is the ready sandbox pod V16 looks from: the first of the
// tenant's warm pools that has one. nil with the reason when there is none
// or it runs on a node where nothing runs.
func (v *Verifier) gatewayVantage(ctx context.Context, t model.Tenant) (*corev1.Pod, string, error) {
	if len(t.WarmPools) == 0 {
		return nil, "the tenant has no warm pool, so no sandbox to look from", nil
	}
	pods, err := v.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("listing pods: %w", err)
	}
	sandboxes, err := v.dyn.Resource(sandboxesGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("listing sandboxes: %w", err)
	}
	for _, wp := range t.WarmPools {
		ready := readySandboxPods(wp.Name, sandboxes.Items, pods.Items)
		if len(ready) == 0 {
			continue
		}
		pod := ready[0]
		if v.isFakeNode(ctx, pod.Spec.NodeName) {
			return nil, fmt.Sprintf("sandbox pod %s is on kwok node %s: nothing runs there to look from", pod.Name, pod.Spec.NodeName), nil
		}
		return pod, "", nil
	}
	return nil, "no warm pool has a ready sandbox with a ready pod to look from (V07 says why)", nil
}

// gatewayKey is one credential value V16 looks for, by the name it reports.
type gatewayKey struct{ name, value string }

// gatewayKeys reads the values of the gateway's credentials, to look for
// in the sandbox; they stay in memory and appear in no result. What cannot
// be read is returned as what is not shown.
func (v *Verifier) gatewayKeys(ctx context.Context, t model.Tenant) (keys []gatewayKey, unread []string) {
	for _, d := range t.EgressGateway.Destinations {
		c := d.Credential
		if c == nil {
			continue
		}
		name := fmt.Sprintf("Secret %s key %s (%s)", c.Secret, c.Key, d.Host)
		s, err := v.kube.CoreV1().Secrets(t.Namespace).Get(ctx, c.Secret, metav1.GetOptions{})
		if err != nil {
			unread = append(unread, fmt.Sprintf("whether the sandbox holds the key of %s: %s", name, shortErr(err)))
			continue
		}
		value := strings.TrimSpace(string(s.Data[c.Key]))
		if len(value) < minKeyLength {
			unread = append(unread, fmt.Sprintf("whether the sandbox holds the key of %s: it is shorter than %d bytes, too short to look for", name, minKeyLength))
			continue
		}
		keys = append(keys, gatewayKey{name: name, value: value})
	}
	return keys, unread
}

// podSecretRefs names where pod reads one of secrets: an env var, an
// envFrom, a volume or a projected volume's source.
func podSecretRefs(pod *corev1.Pod, secrets []string) []string {
	is := func(name string) bool {
		for _, s := range secrets {
			if s == name {
				return true
			}
		}
		return false
	}
	var out []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && is(r.SecretKeyRef.Name) {
				out = append(out, fmt.Sprintf("env %s of container %s", e.Name, c.Name))
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && is(e.SecretRef.Name) {
				out = append(out, fmt.Sprintf("envFrom of container %s", c.Name))
			}
		}
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Secret != nil && is(vol.Secret.SecretName) {
			out = append(out, "volume "+vol.Name)
		}
		if vol.Projected != nil {
			for _, src := range vol.Projected.Sources {
				if src.Secret != nil && is(src.Secret.Name) {
					out = append(out, "projected volume "+vol.Name)
				}
			}
		}
	}
	return out
}
