// The network probe's named-egress part (V10): a tenant's FQDN allow-list,
// shown with traffic to hosts verify has been told it may reach
// (Options.FQDNProbeHosts; on target local, the local stack's world hosts).
//
// Three results per tenant that lists names, each judged on its own:
//   - a listed name is reached on its port, by name, as an agent would (the
//     control client reaching it first: a host that is down proves nothing);
//   - an unlisted host, at the address the control client's lookup gave, is
//     refused on that port while the control client reaches it: the policy
//     opens names, not the world;
//   - a lookup of the unlisted name gets no address while the control
//     client's gets one: DNS answers only the names the tenant may reach, so
//     it is no channel out.
//
// Traffic goes only to the probe hosts and to the cluster resolver.

package verify

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddock-platform/paddock/internal/model"
)

// fqdnPort is the port an FQDN allow-list opens (manifests.FQDNPolicy).
const fqdnPort = 443

// fqdnProbe is one tenant's named-egress probe.
type fqdnProbe struct {
	side, control *probeSide
	results       []Result
}

// pickFQDNHosts chooses, among the hosts verify may probe, one the tenant's
// allow-list lets through as Cilium reads it, and one no reading of it lets
// through ("" when there is none).
func pickFQDNHosts(allow, hosts []string) (listed, unlisted string) {
	for _, h := range hosts {
		exact, covered := false, false
		for _, pat := range allow {
			exact = exact || model.FQDNMatches(pat, h, false)
			covered = covered || model.FQDNMatches(pat, h, true)
		}
		if exact && listed == "" {
			listed = h
		}
		if !covered && unlisted == "" {
			unlisted = h
		}
	}
	return listed, unlisted
}

// connectNameCommand asks nc to connect to host:port, a name or an address,
// and prints nc's exit status after the marker.
func connectNameCommand(host string, port int) []string {
	return []string{"sh", "-c", fmt.Sprintf("nc -w 2 %s %d </dev/null 2>&1; echo %s$?", shellQuote(host), port, probeExitMarker)}
}

// parseConnectName reads connectNameCommand's output: a connection that was
// made is reached (no greeting is asked for: a real host need not say
// anything), a name that did not resolve is refused.
func parseConnectName(stdout, stderr string, err error) attempt {
	a := parseConnect(stdout, stderr, err)
	if a.outcome == attemptBroken && strings.Contains(a.detail, "bad address") {
		return attempt{outcome: attemptRefused, detail: a.detail}
	}
	return a
}

func (v *Verifier) connectName(ctx context.Context, client *corev1.Pod, host string, port int) attempt {
	stdout, stderr, err := v.exec.Exec(ctx, client.Namespace, client.Name, "probe", connectNameCommand(host, port))
	return parseConnectName(stdout, stderr, err)
}

// lookupAnswer is one lookup of a name through the pod's resolv.conf.
type lookupAnswer struct {
	attempt
	addr string // the first IPv4 address answered for the name; "" for none
}

var nameLineRe = regexp.MustCompile(`(?m)^Name:\s*(\S+)\s*$`)

// parseNameLookup reads busybox nslookup's output for name: an address for
// it is reached; an answer without one (REFUSED, NXDOMAIN, SERVFAIL, no
// record) or no answer at all is refused; anything else did not run.
func parseNameLookup(name, stdout, stderr string, err error) lookupAnswer {
	body, status, broken := readProbe("nslookup", stdout, stderr, err)
	if broken != nil {
		return lookupAnswer{attempt: *broken}
	}
	said := strings.TrimSpace(body)
	want := strings.TrimSuffix(strings.ToLower(name), ".")
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		m := nameLineRe.FindStringSubmatch(line)
		if m == nil || strings.TrimSuffix(strings.ToLower(m[1]), ".") != want {
			continue
		}
		for _, next := range lines[i+1:] {
			f := strings.Fields(next)
			if len(f) < 2 || !strings.HasPrefix(f[0], "Address") {
				break
			}
			if a, err := netip.ParseAddr(f[len(f)-1]); err == nil && a.Is4() {
				return lookupAnswer{attempt: attempt{outcome: attemptReached, greeted: true, detail: name + " is " + a.String()}, addr: a.String()}
			}
		}
	}
	for _, no := range []string{"REFUSED", "NXDOMAIN", "SERVFAIL", "can't find", "timed out", "no servers could be reached"} {
		if strings.Contains(body, no) {
			return lookupAnswer{attempt: attempt{outcome: attemptRefused, detail: firstLine(strings.TrimSpace(lastNonEmpty(said)))}}
		}
	}
	return lookupAnswer{attempt: attempt{outcome: attemptBroken, detail: fmt.Sprintf("nslookup exited %d with no address and no refusal: %s", status, firstLine(said))}}
}

func lastNonEmpty(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func (v *Verifier) lookupName(ctx context.Context, client *corev1.Pod, name string) lookupAnswer {
	stdout, stderr, err := v.exec.Exec(ctx, client.Namespace, client.Name, "probe", nslookupCommand(name, ""))
	return parseNameLookup(name, stdout, stderr, err)
}

// untilReached tries until an attempt is reached or the deadline.
func untilReached(ctx context.Context, deadline time.Time, try func() attempt) (bool, int, attempt) {
	n := 0
	var last attempt
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n++
		if last = try(); last.outcome == attemptReached {
			return true, n, last
		}
		sleep(ctx, time.Second)
	}
	return false, n, last
}

// probeFQDNs judges one tenant's allow-list; see the file comment.
func (v *Verifier) probeFQDNs(ctx context.Context, f *fqdnProbe) []Result {
	s, c := f.side, f.control
	subject := s.ns + " named egress"
	allow := s.tenant.Egress.FQDNs
	hosts := v.opts.FQDNProbeHosts
	if len(hosts) == 0 {
		return []Result{notVerifiable(subject, "the tenant allows %s by name, but verify was given no host it may send traffic to: pass --fqdn-probe-host with a name the list allows and one it does not", joinMax(allow, 3))}
	}
	if c.err != nil {
		return []Result{notVerifiable(subject, "the control pods did not run (%v), so nothing shows which probe hosts answer", c.err)}
	}
	listed, unlisted := pickFQDNHosts(allow, hosts)
	port := strconv.Itoa(fqdnPort)
	var out []Result

	// A listed name, by name, as an agent reaches it.
	if listed == "" {
		out = append(out, notVerifiable(subject+" "+hosts[0], "none of the probe hosts (%s) is on the allow-list (%s), so nothing shows the list letting a name through", joinMax(hosts, 4), joinMax(allow, 3)))
	} else {
		deadline := time.Now().Add(probeTimeouts.reach)
		sub := subject + " " + listed
		if ok, n, last := untilReached(ctx, deadline, func() attempt { return v.connectName(ctx, c.client, listed, fqdnPort) }); !ok {
			out = append(out, notVerifiable(sub, "the control client, where no policy applies, did not reach %s:%s either in %d attempts (%s): the host does not answer, so the allow-list cannot be shown", listed, port, n, describe(last)))
		} else if ok, n, last := untilReached(ctx, deadline, func() attempt { return v.connectName(ctx, s.client, listed, fqdnPort) }); !ok {
			if last.outcome == attemptBroken {
				out = append(out, fail(sub, "a pod of %s -> %s:%s: the probe did not run (%s)", s.ns, listed, port, last.detail))
			} else {
				out = append(out, fail(sub, "a pod of %s did not reach %s:%s in %d attempts (%s), although the allow-list names it and the control client reaches it: the policy does not let the listed name through", s.ns, listed, port, n, describe(last)))
			}
		} else {
			out = append(out, pass(sub, "a pod of %s reached %s:%s by name, as an agent would (the allow-list names it)", s.ns, listed, port))
		}
	}

	if unlisted == "" {
		return append(out, notVerifiable(subject+" unlisted", "every probe host (%s) is on the allow-list (%s), so nothing shows the list refusing a name", joinMax(hosts, 4), joinMax(allow, 3)))
	}
	// The control's lookup of the unlisted name: its address, and the proof
	// that the resolver answers the name where no policy applies.
	deadline := time.Now().Add(probeTimeouts.reach)
	var answer lookupAnswer
	ok, n, _ := untilReached(ctx, deadline, func() attempt { answer = v.lookupName(ctx, c.client, unlisted); return answer.attempt })
	if !ok {
		why := fmt.Sprintf("the control client, where no policy applies, got no address for %s in %d attempts (%s)", unlisted, n, describe(answer.attempt))
		return append(out,
			notVerifiable(subject+" "+unlisted, "%s: the refusal of an unlisted host cannot be shown", why),
			notVerifiable(s.ns+" DNS "+unlisted, "%s: the refusal of its lookup cannot be shown", why))
	}
	ip := answer.addr
	controlOK, n, last := untilReached(ctx, deadline, func() attempt { return v.connectName(ctx, c.client, ip, fqdnPort) })
	conn := &judgment{
		subject: subject + " " + unlisted, from: "a pod of " + s.ns, to: unlisted,
		hole: "it is not on the allow-list: " + s.ns + "'s policies let a host off it through", owner: s, client: s.client, ip: ip, port: fqdnPort,
		control: "the control client reached it where no policy applies",
	}
	conn.res = refused(ctx, time.Now().Add(probeTimeouts.reach), func() attempt { return v.connectName(ctx, s.client, ip, fqdnPort) })
	out = append(out, conn.result(controlOK, fmt.Sprintf("the control client did not reach %s:%s either in %d attempts (%s)", ip, port, n, describe(last))))

	// The tenant's lookup of the unlisted name.
	dns := refused(ctx, time.Now().Add(probeTimeouts.reach), func() attempt { return v.lookupName(ctx, s.client, unlisted).attempt })
	sub := s.ns + " DNS " + unlisted
	switch {
	case dns.reached > 0 && !dns.denied:
		out = append(out, fail(sub, "a pod of %s got an address for %s, which its allow-list does not name, in %d of %d lookups: the cluster resolver answers names off the list, a channel out", s.ns, unlisted, dns.reached, dns.attempts))
	case !dns.denied && dns.broken != "":
		out = append(out, fail(sub, "looking up %s from a pod of %s: the probe did not run (%s)", unlisted, s.ns, dns.broken))
	case !dns.denied:
		out = append(out, fail(sub, "looking up %s from a pod of %s: no %d refusals in a row within %s (%d attempts; last: %s)", unlisted, s.ns, denialStreak, probeTimeouts.reach, dns.attempts, dns.refusal))
	default:
		out = append(out, pass(sub, "a pod of %s got no address for %s, which its allow-list does not name (%s), %d times in a row, while the control client's lookup got %s", s.ns, unlisted, dns.refusal, denialStreak, ip))
	}
	return out
}
