package policy_test

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/schemas"
)

const localHead = `platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
`

// srcAt is "spec.hcl:line:col" of the first occurrence of needle in src.
func srcAt(t *testing.T, src, needle string) string {
	t.Helper()
	i := strings.Index(src, needle)
	if i < 0 {
		t.Fatalf("%q not in the spec", needle)
	}
	line := strings.Count(src[:i], "\n") + 1
	col := i - strings.LastIndex(src[:i], "\n")
	return fmt.Sprintf("spec.hcl:%d:%d", line, col)
}

// Every way a spec opens egress is judged on the rendered objects: a proxy,
// an FQDN name, the controller's default policy. Each finding points at the
// argument that opened the hole.
func TestEgressRulesJudgeRenderedObjects(t *testing.T) {
	tenant := func(body string) string {
		return localHead + `tenant "a" {
  template "t" {
    image         = "r.example.com/a:1"
    runtime_class = "gvisor"
  }
` + body + `
}
`
	}
	for _, c := range []struct {
		name string
		src  string
		// want are "RULE needle": the rule fires at needle's position.
		want []string
		// not are rules that must not fire.
		not []string
	}{
		{"proxy at the metadata address", tenant(`  egress {
    proxy {
      url  = "http://169.254.169.254:80"
      cidr = "169.254.169.254/32"
    }
  }`), []string{`PDK-502 url  = "http://169.254.169.254:80"`, `PDK-503 cidr = "169.254.169.254/32"`}, []string{"PDK-504"}},
		{"proxy to the whole internet", tenant(`  egress {
    proxy {
      url  = "http://proxy.example.com:3128"
      cidr = "0.0.0.0/0"
    }
  }`), []string{`PDK-504 cidr = "0.0.0.0/0"`}, []string{"PDK-502", "PDK-503"}},
		{"proxy to the whole IPv6 internet", tenant(`  egress {
    proxy {
      url  = "http://proxy.example.com:3128"
      cidr = "::/0"
    }
  }`), []string{`PDK-504 cidr = "::/0"`}, []string{"PDK-502"}},
		{"proxy in the cluster on port 80", tenant(`  egress {
    proxy {
      url       = "http://squid.egress.svc.cluster.local"
      namespace = "egress"
    }
  }`), []string{`PDK-502 url       = "http://squid.egress.svc.cluster.local"`}, []string{"PDK-503", "PDK-504"}},
		{"proxy in the cluster on its own port", tenant(`  egress {
    proxy {
      url       = "http://squid.egress.svc.cluster.local:3128"
      namespace = "egress"
    }
  }`), nil, []string{"PDK-501", "PDK-502", "PDK-503", "PDK-504", "PDK-505"}},
		{"metadata host name", tenant(`  egress {
    fqdns = ["metadata.google.internal"]
  }`), []string{`PDK-503 fqdns = ["metadata.google.internal"]`}, []string{"PDK-502", "PDK-504"}},
		{"no default deny: the controller's default policy", tenant(`  egress {
    default_deny = false
  }`), []string{"PDK-501 default_deny = false", "PDK-502 default_deny = false", "PDK-504 default_deny = false", "PDK-505 default_deny = false"}, []string{"PDK-503"}},
		{"allow as before", tenant(`  egress {
    allow {
      cidr  = "169.254.169.254/32"
      ports = [80]
    }
  }`), []string{`PDK-502 ports = [80]`, `PDK-503 cidr  = "169.254.169.254/32"`}, []string{"PDK-504"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := policy.Check(mustLoadSource(t, c.src), testNow)
			for _, w := range c.want {
				id, needle, _ := strings.Cut(w, " ")
				at := srcAt(t, c.src, needle)
				var found bool
				for _, f := range fired(r, id) {
					found = found || f.Src.String() == at && f.Object == "tenant.a"
				}
				if !found {
					t.Errorf("%s does not fire at %s (%s); findings: %v", id, at, needle, fired(r, id))
				}
			}
			for _, id := range c.not {
				if fs := fired(r, id); len(fs) > 0 {
					t.Errorf("%s fires: %v", id, fs)
				}
			}
		})
	}
}

// The one accepted exception stays exactly as it was: the GKE metadata
// server hole of a workload identity of the agent, reported by PDK-207, and
// the same hole spelled as a proxy is the same hole.
func TestMetadataServerHoleThroughProxy(t *testing.T) {
	proxy := `  egress {
    proxy {
      url  = "http://169.254.169.254"
      cidr = "169.254.169.254/32"
    }
  }
`
	r := policy.Check(mustLoadSource(t, gkeTenant("", agentIdentity+proxy)), testNow)
	if len(fired(r, "PDK-502"))+len(fired(r, "PDK-503")) != 0 || len(fired(r, "PDK-207")) != 1 {
		t.Errorf("exact hole with an agent identity: 502 %v, 503 %v, 207 %v", fired(r, "PDK-502"), fired(r, "PDK-503"), fired(r, "PDK-207"))
	}
	r = policy.Check(mustLoadSource(t, gkeTenant("", proxy)), testNow)
	if len(fired(r, "PDK-502")) != 1 || len(fired(r, "PDK-503")) != 1 {
		t.Errorf("the hole without an agent identity: 502 %v, 503 %v", fired(r, "PDK-502"), fired(r, "PDK-503"))
	}
}

// ---- property test -----------------------------------------------------------

// reachable is the test's own reading of a rendered egress rule: what it
// lets a sandbox reach, independent of policy's.
type reachable struct {
	metadata, world, port80 bool
	exactHole               bool
}

var testMetadata = netip.MustParseAddr("169.254.169.254")

func readK8sRule(r networkingv1.NetworkPolicyEgressRule) reachable {
	var out reachable
	if len(r.To) == 0 {
		out.metadata, out.world = true, true
	}
	for _, to := range r.To {
		if to.IPBlock == nil {
			continue
		}
		pfx := netip.MustParsePrefix(to.IPBlock.CIDR)
		if pfx.Bits() == 0 {
			out.world = true
		}
		in := pfx.Contains(testMetadata)
		for _, e := range to.IPBlock.Except {
			if netip.MustParsePrefix(e).Contains(testMetadata) {
				in = false
			}
		}
		out.metadata = out.metadata || in
	}
	if len(r.Ports) == 0 {
		out.port80 = true
	}
	for _, p := range r.Ports {
		if p.Port == nil || p.Port.Type == intstr.String || p.Port.IntVal == 80 || p.EndPort != nil && p.Port.IntVal <= 80 && 80 <= *p.EndPort {
			out.port80 = true
		}
	}
	out.exactHole = len(r.To) == 1 && r.To[0].IPBlock != nil && r.To[0].IPBlock.CIDR == model.GKEMetadataServerCIDR && len(r.To[0].IPBlock.Except) == 0 &&
		len(r.Ports) == 1 && r.Ports[0].Port != nil && r.Ports[0].Port.IntVal == 80 && r.Ports[0].EndPort == nil &&
		(r.Ports[0].Protocol == nil || *r.Ports[0].Protocol == "TCP")
	return out
}

// readFQDNRules reads the rules of an FQDN policy (Cilium's toFQDNs or GKE's
// matches): host names and patterns on ports.
func readFQDNRules(u *unstructured.Unstructured) []reachable {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "egress")
	var out []reachable
	for _, r := range rules {
		rule := r.(map[string]any)
		var rr reachable
		var names []any
		if l, ok := rule["toFQDNs"].([]any); ok {
			names = l
		}
		if l, ok := rule["matches"].([]any); ok {
			names = l
		}
		for _, n := range names {
			for _, v := range n.(map[string]any) {
				switch v.(string) {
				case "metadata.google.internal", "*.google.internal", "*.internal", "*":
					rr.metadata = true
				}
				switch v.(string) {
				case "*", "*.co.uk", "*.github.io":
					rr.world = true
				}
			}
		}
		out = append(out, rr)
	}
	return out
}

// genSpec writes a random spec: tenants whose egress is opened every way the
// language has, on a local or GKE target, with random waivers.
func genSpec(rng *rand.Rand) string {
	pick := func(list ...string) string { return list[rng.Intn(len(list))] }
	cidr := func() string {
		if rng.Intn(3) == 0 {
			return pick("169.254.169.254/32", "169.254.0.0/16", "0.0.0.0/0", "::/0", "10.0.0.0/8", "0.0.0.0/1", "160.0.0.0/4",
				"203.0.113.7/32", "fd00:ec2::254/128", "169.254.169.252/32", "169.254.170.2/32", "2001:db8::/32", "169.254.169.0/24", "128.0.0.0/1")
		}
		if rng.Intn(2) == 0 {
			a := netip.AddrFrom4([4]byte{byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))})
			if rng.Intn(3) == 0 {
				a = netip.AddrFrom4([4]byte{169, 254, byte(rng.Intn(256)), byte(rng.Intn(256))})
			}
			return netip.PrefixFrom(a, rng.Intn(33)).Masked().String()
		}
		var b [16]byte
		rng.Read(b[:])
		return netip.PrefixFrom(netip.AddrFrom16(b), rng.Intn(129)).Masked().String()
	}
	ports := func() string {
		var ps []string
		for n := 1 + rng.Intn(3); n > 0; n-- {
			ps = append(ps, pick("80", "443", "53", "988", "8080", "3128", "22"))
		}
		return "[" + strings.Join(ps, ", ") + "]"
	}
	gke := rng.Intn(2) == 0
	var b strings.Builder
	b.WriteString("platform { name = \"prop\" }\n")
	if gke {
		b.WriteString("target \"gke\" {\n  project  = \"prop-project\"\n  location = \"europe-west4\"\n}\n")
		b.WriteString("cluster {\n  dataplane_v2 = " + pick("true", "true", "false") + "\n}\n")
		b.WriteString("node_pool \"sandboxes\" {}\nruntime_class \"gvisor\" {\n  handler   = \"gvisor\"\n  node_pool = \"sandboxes\"\n}\n")
	} else {
		b.WriteString("target \"local\" {}\nruntime_class \"gvisor\" { handler = \"runsc\" }\n")
	}
	b.WriteString("agent_sandbox { version = \"v0.5.6\" }\n")
	tenants := 1 + rng.Intn(3)
	for i := 0; i < tenants; i++ {
		fmt.Fprintf(&b, "tenant \"t%d\" {\n", i)
		if gke && rng.Intn(2) == 0 {
			b.WriteString("  identity {\n    workload_identity \"agent\" { roles = [\"roles/aiplatform.user\"] }\n  }\n")
		}
		b.WriteString("  egress {\n")
		if rng.Intn(6) == 0 {
			b.WriteString("    default_deny = false\n")
		}
		if rng.Intn(3) == 0 {
			b.WriteString("    dns = false\n")
		}
		if !gke || rng.Intn(2) == 0 {
			if rng.Intn(3) == 0 {
				fmt.Fprintf(&b, "    fqdns = [%q]\n", pick("api.example.com", "*.example.com", "metadata.google.internal", "*.google.internal", "*.internal", "*.co.uk", "*.github.io"))
			}
		}
		for n := rng.Intn(3); n > 0; n-- {
			fmt.Fprintf(&b, "    allow {\n      cidr     = %q\n      ports    = %s\n      protocol = %q\n    }\n", cidr(), ports(), pick("TCP", "TCP", "UDP", "SCTP"))
		}
		if rng.Intn(2) == 0 {
			port := pick("", ":80", ":3128", ":8080", ":988", ":53")
			if rng.Intn(2) == 0 {
				fmt.Fprintf(&b, "    proxy {\n      url  = \"http://proxy.example%s\"\n      cidr = %q\n    }\n", port, cidr())
			} else {
				fmt.Fprintf(&b, "    proxy {\n      url       = \"http://squid.egress%s\"\n      namespace = \"egress\"\n    }\n", port)
			}
		}
		b.WriteString("  }\n")
		b.WriteString("  template \"t\" {\n    image         = \"r.example.com/a:1\"\n    runtime_class = \"gvisor\"\n  }\n}\n")
	}
	for _, rule := range []string{"PDK-502", "PDK-503", "PDK-504"} {
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "waiver {\n  rule   = %q\n  reason = \"property test\"\n  scope  = \"tenant.t%d\"\n}\n", rule, rng.Intn(tenants))
		}
	}
	return b.String()
}

// For randomly generated specs, every egress rule of the objects `render`
// writes that can reach 169.254.169.254, 0.0.0.0/0 or ::/0, or port 80 has
// a matching finding of its tenant at its origin, unwaived or waived. The
// one exception, the GKE metadata server hole of a workload identity of the
// agent, is matched by that identity's PDK-207 finding.
func TestEgressPropertyEveryRenderedHoleHasAFinding(t *testing.T) {
	const iterations = 400
	rng := rand.New(rand.NewSource(13))
	loaded, checked := 0, 0
	for it := 0; it < iterations; it++ {
		src := genSpec(rng)
		p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
		if diags.HasErrors() {
			continue // a random spec the language refuses (a public-suffix wildcard, an FQDN on a target without FQDN policy)
		}
		loaded++
		r := policy.Check(p, testNow)
		all := append(append([]policy.Finding{}, r.Findings...), r.Waived...)
		has := func(id, object string, at model.Range) bool {
			for _, f := range all {
				if f.RuleID == id && strings.HasPrefix(f.Object, object) && (!at.Known() || f.Src == at) {
					return true
				}
			}
			return false
		}
		objs, err := render.All(p)
		if err != nil {
			t.Fatalf("spec %d does not render: %v\n%s", it, err, src)
		}
		for ti, tn := range p.Tenants {
			view, err := manifests.TenantEgress(p, tn)
			if err != nil {
				t.Fatal(err)
			}
			inRender := func(u *unstructured.Unstructured) bool {
				for _, o := range objs {
					if o.GetKind() == u.GetKind() && o.GetNamespace() == u.GetNamespace() && o.GetName() == u.GetName() {
						return fmt.Sprint(o.Object) == fmt.Sprint(u.Object)
					}
				}
				return false
			}
			addr := "tenant." + tn.Name
			expect := func(what string, rr reachable, ref manifests.RuleRef) {
				checked++
				o := view.Origins[ref]
				ports := o.PortsSrc()
				if rr.exactHole && p.AgentNeedsMetadataServer(p.Tenants[ti]) {
					if !has("PDK-207", addr, model.Range{}) {
						t.Errorf("spec %d: %s is the metadata server hole, but PDK-207 does not report it\n%s", it, what, src)
					}
					return
				}
				if rr.metadata && !has("PDK-503", addr, o.Src) {
					t.Errorf("spec %d: %s reaches 169.254.169.254 without a PDK-503 finding at %s\n%s", it, what, o.Src, src)
				}
				if rr.world && !has("PDK-504", addr, o.Src) {
					t.Errorf("spec %d: %s reaches the whole internet without a PDK-504 finding at %s\n%s", it, what, o.Src, src)
				}
				if rr.port80 && !has("PDK-502", addr, ports) {
					t.Errorf("spec %d: %s opens port 80 without a PDK-502 finding at %s\n%s", it, what, ports, src)
				}
			}
			for _, u := range view.Objects {
				if !inRender(u) {
					t.Fatalf("spec %d: %s %s is not what render writes", it, u.GetKind(), u.GetName())
				}
				ref := func(i int) manifests.RuleRef {
					return manifests.RuleRef{Kind: u.GetKind(), Name: u.GetNamespace() + "/" + u.GetName(), Index: i}
				}
				switch u.GetKind() {
				case "NetworkPolicy":
					var np networkingv1.NetworkPolicy
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
						t.Fatal(err)
					}
					for i, er := range np.Spec.Egress {
						expect(fmt.Sprintf("NetworkPolicy %s rule %d", np.Name, i), readK8sRule(er), ref(i))
					}
				case "SandboxTemplate":
					var st extv1beta1.SandboxTemplate
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
						t.Fatal(err)
					}
					rules := manifests.ControllerDefaultEgress()
					if st.Spec.NetworkPolicy != nil {
						rules = st.Spec.NetworkPolicy.Egress
					}
					for i, er := range rules {
						expect(fmt.Sprintf("SandboxTemplate %s rule %d", st.Name, i), readK8sRule(er), ref(i))
					}
				default:
					for i, rr := range readFQDNRules(u) {
						expect(fmt.Sprintf("%s %s rule %d", u.GetKind(), u.GetName(), i), rr, ref(i))
					}
				}
			}
		}
	}
	if loaded < iterations/2 || checked < iterations {
		t.Fatalf("only %d of %d random specs loaded, %d rules checked: the generator no longer exercises the rules", loaded, iterations, checked)
	}
	t.Logf("%d specs loaded, %d rendered egress rules checked", loaded, checked)
}

// A finding on a megabyte-long line prints a window of it.
func TestFindingSnippetClipped(t *testing.T) {
	src := localHead + `tenant "a" {
  egress {
    allow {
      cidr  = "0.0.0.0/0" # ` + strings.Repeat("x", 900<<10) + `
      ports = [443]
    }
  }
}
`
	r := policy.Check(mustLoadSource(t, src), testNow)
	var out strings.Builder
	if err := r.WriteText(&out, policy.TextOptions{Source: func(string) ([]byte, bool) { return []byte(src), true }}); err != nil {
		t.Fatal(err)
	}
	if len(fired(r, "PDK-504")) != 1 || out.Len() > 5000 || !strings.Contains(out.String(), `cidr  = "0.0.0.0/0"`) {
		t.Errorf("%d bytes:\n%.3000s", out.Len(), out.String())
	}
}
