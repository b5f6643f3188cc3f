package bench

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/loadgen"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
)

// loadBenchSpec loads the benchmark's spec as up would, policy included.
func loadBenchSpec(t *testing.T, concurrency int) (*model.Platform, model.Tenant) {
	t.Helper()
	ca, err := newBenchCA()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(gatewayBenchSpec(ca.pem, "localhost/paddock/gateway:dev", concurrency)), 0o644); err != nil {
		t.Fatal(err)
	}
	var diag bytes.Buffer
	p, err := specload.Load(dir, specload.Options{}, &diag)
	if err != nil {
		t.Fatalf("the benchmark's spec does not load: %v\n%s", err, diag.String())
	}
	for _, tn := range p.Tenants {
		if tn.Name == gatewayBenchTenant {
			if tn.Namespace != gatewayBenchNamespace {
				t.Fatalf("tenant %s's namespace is %s, the benchmark looks in %s", tn.Name, tn.Namespace, gatewayBenchNamespace)
			}
			return p, tn
		}
	}
	t.Fatalf("no tenant %s", gatewayBenchTenant)
	return nil, model.Tenant{}
}

func TestGatewayBenchSpec(t *testing.T) {
	_, tn := loadBenchSpec(t, 16)
	g := tn.EgressGateway
	if g == nil || len(g.Destinations) != 1 {
		t.Fatalf("want one gateway destination, got %+v", g)
	}
	d := g.Destinations[0]
	if d.Host != gatewayBenchHost.Name || d.Port != gatewayBenchPort || d.Credential == nil || d.Credential.Secret != gatewayBenchSecret {
		t.Errorf("destination %+v: want %s:%d with the key of Secret %s", d, gatewayBenchHost.Name, gatewayBenchPort, gatewayBenchSecret)
	}
	// The load must never be refused for its budget: every worker may hold
	// a request and a connection, and the requests of a run fit.
	if b := g.Budgets; b.ConcurrentRequests < 16 || b.Connections < 16 || b.RequestsPerMinute < 60000 {
		t.Errorf("budgets %+v too small for 16 workers", b)
	}
}

// TestLoadSandboxReachesBothPaths: the tenant's NetworkPolicies let its
// sandbox (the load generator's) reach the gateway on its port and the test
// server directly, and the gateway's ingress policy admits it.
func TestLoadSandboxReachesBothPaths(t *testing.T) {
	p, tn := loadBenchSpec(t, 4)
	objs, err := manifests.EgressObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	var pols []*networkingv1.NetworkPolicy
	for _, u := range objs {
		if u.GetKind() != "NetworkPolicy" {
			continue
		}
		var np networkingv1.NetworkPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
			t.Fatal(err)
		}
		pols = append(pols, &np)
	}
	if len(tn.Templates) != 1 {
		t.Fatalf("want the one load template, got %d", len(tn.Templates))
	}
	tpl, err := manifests.SandboxTemplate(p, tn, tn.Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	// A sandbox pod: the template's labels and the hash label the
	// controller adds.
	podLabels := labels.Set{sandboxv1beta1.SandboxTemplateRefHashLabel: "h"}
	for k, v := range tpl.Spec.PodTemplate.ObjectMeta.Labels {
		podLabels[k] = v
	}
	spec := tpl.Spec.PodTemplate.Spec
	if spec.RuntimeClassName == nil || *spec.RuntimeClassName != gatewayBenchRuntime {
		t.Errorf("the load sandbox's runtime class: %v", spec.RuntimeClassName)
	}
	if c := spec.Containers[0]; c.Name != "agent" || strings.Join(c.Command, " ") != manifests.GatewayBinary+" loadgen -idle" || c.Image != "localhost/paddock/gateway:dev" {
		t.Errorf("the load sandbox's container %s runs %v of %s; want agent (execLoad's) idling in the gateway's image", c.Name, c.Command, c.Image)
	}
	gw := labels.Set(manifests.GatewayPodLabels())
	selects := func(sel *metav1.LabelSelector, l labels.Set) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		return s.Matches(l)
	}
	portOK := func(ports []networkingv1.NetworkPolicyPort, want int32) bool {
		if len(ports) == 0 {
			return true
		}
		for _, pt := range ports {
			if pt.Port != nil && pt.Port.IntVal == want {
				return true
			}
		}
		return false
	}
	server := netip.MustParseAddr(gatewayBenchHost.Addr())
	var toGateway, toServer, intoGateway bool
	for _, pol := range pols {
		if selects(&pol.Spec.PodSelector, podLabels) {
			for _, r := range pol.Spec.Egress {
				for _, peer := range r.To {
					if peer.PodSelector != nil && peer.NamespaceSelector == nil && selects(peer.PodSelector, gw) && portOK(r.Ports, model.GatewayListenPort) {
						toGateway = true
					}
					if peer.IPBlock != nil && netip.MustParsePrefix(peer.IPBlock.CIDR).Contains(server) && portOK(r.Ports, gatewayBenchPort) {
						toServer = true
					}
				}
			}
		}
		if selects(&pol.Spec.PodSelector, gw) {
			for _, r := range pol.Spec.Ingress {
				for _, peer := range r.From {
					if peer.PodSelector != nil && selects(peer.PodSelector, podLabels) && portOK(r.Ports, model.GatewayListenPort) {
						intoGateway = true
					}
				}
			}
		}
	}
	if !toGateway || !toServer || !intoGateway {
		t.Errorf("the load sandbox's paths: egress to the gateway %v, egress to the server %v, the gateway's ingress %v; want all", toGateway, toServer, intoGateway)
	}
}

func TestParseLoadOutput(t *testing.T) {
	r, err := parseLoadOutput("starting\n{\"url\":\"http://x/\",\"ok\":5,\"rps\":2.5,\"p50Ms\":1.5}\n", true)
	if err != nil || r.OK != 5 || r.RPS != 2.5 || r.P50Ms != 1.5 {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, c := range []struct {
		out       string
		succeeded bool
		says      string
	}{
		{"paddock-gateway loadgen: did not answer 200\n", false, "failed"},
		{"nothing\n", true, "no result"},
		{"usage: paddock-gateway -config FILE [-check] [-drain DURATION]\n", false, "make build"},
	} {
		if _, err := parseLoadOutput(c.out, c.succeeded); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want an error saying %q", c.out, err, c.says)
		}
	}
}

func sampleGateway() *GatewayResult {
	run := func(rps, p50, p95, p99 float64, errs map[string]int) GatewayRun {
		return GatewayRun{Load: &loadgen.Result{OK: int(rps * 30), RPS: rps, P50Ms: p50, P95Ms: p95, P99Ms: p99, Errors: errs, Connections: 16},
			LoadStart: []float64{1, 2, 3}, LoadEnd: []float64{1.5, 2, 3}}
	}
	g := &GatewayResult{Nodes: "real", RuntimeClass: "gvisor", Destination: "pypi.mirror.paddock.test:8443", Concurrency: 16, Seconds: 30, Warmup: 5,
		Rounds: []GatewayRound{
			{First: "direct", Direct: run(100, 2, 5, 9, nil), Gateway: run(50, 4.5, 11, 20, map[string]int{"status_502": 2})},
			{First: "gateway", Direct: run(80, 3, 6, 10, nil), Gateway: run(60, 4, 9, 15, nil)},
			{First: "direct", Direct: run(120, 1, 4, 8, nil), Gateway: run(30, 9, 30, 40, nil)},
		},
		KeyInjected: 1600, KeyAbsent: 3100}
	g.derive()
	return g
}

func TestGatewayDeriveAndReport(t *testing.T) {
	g := sampleGateway()
	// Each path's medians, and the medians of the paired differences
	// (+2.5/+1/+8 and +6/+3/+26 ms, ratios 0.5/0.75/0.25).
	if g.Direct != (GatewayFigures{RPS: 100, P50Ms: 2, P95Ms: 5, P99Ms: 9}) || g.Gateway != (GatewayFigures{RPS: 50, P50Ms: 4.5, P95Ms: 11, P99Ms: 20}) {
		t.Errorf("medians: direct %+v, gateway %+v", g.Direct, g.Gateway)
	}
	if g.AddedP50Ms != 2.5 || g.AddedP95Ms != 6 || g.RPSRatio != 0.5 {
		t.Errorf("added P50 %v, P95 %v, ratio %v; want 2.5, 6, 0.5", g.AddedP50Ms, g.AddedP95Ms, g.RPSRatio)
	}
	r := &Results{Paddock: &Build{Commit: "abc", SHA256: "x"}, Machine: "linux/amd64, 2 CPUs", Gateway: g,
		MeasuredBy: map[string]Measured{SectionGateway: {Paddock: &Build{Commit: "def123", SHA256: "y"}, Date: "today"}}}
	var b bytes.Buffer
	r.writeGateway(&b)
	out := b.String()
	for _, want := range []string{
		"## Egress gateway throughput", "Measured by binary def123 on today", "3 rounds",
		"| direct | 100.0 | 2.00 | 5.00 | 9.00 |\n", "| through the gateway | 50.0 | 4.50 | 11.00 | 20.00 |\n",
		"| 1 | direct | 100.0 | 2.00 | 5.00 | 9.00 | 3000 | none | 16 | 1.00 2.00 3.00 → 1.50 2.00 3.00 |",
		"| 1 | through the gateway | 50.0 | 4.50 | 11.00 | 20.00 | 1500 | `{\"status_502\":2}` |",
		"| 2 | through the gateway | 60.0 |", // the round that ran the gateway first lists it first
		"P50 +2.50 ms, P95 +6.00 ms", "50% of the direct path's", "key on 1600 requests and no key on 3100",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "| 2 | through the gateway") > strings.Index(out, "| 2 | direct") {
		t.Errorf("round 2 ran the gateway first but lists it second:\n%s", out)
	}
	// The whole report renders the section too.
	if err := r.WriteMarkdown(io.Discard); err != nil {
		t.Fatal(err)
	}
}

func TestCarryGateway(t *testing.T) {
	old := &Results{Paddock: &Build{Commit: "0123456789abcdef", SHA256: "x"}, Date: "then", Gateway: sampleGateway()}
	res := &Results{}
	if !CarryGateway(res, old) || res.Gateway != old.Gateway {
		t.Fatal("the gateway figures were not carried over")
	}
	if m := res.MeasuredBy[SectionGateway]; m.Paddock.Commit != "0123456789abcdef" || m.Date != "then" {
		t.Errorf("carried figures name %+v, want the old run's binary", m)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "-gateway=false") {
		t.Errorf("notes %v", res.Notes)
	}
	if CarryGateway(&Results{Gateway: &GatewayResult{}}, old) || CarryGateway(&Results{}, &Results{}) {
		t.Error("carried over where the run measured, or from results without figures")
	}
}
