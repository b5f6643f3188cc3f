package bench

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/vaptest"
	"github.com/paddock-platform/paddock/schemas"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// The claims the benchmark makes pass the tenant's claims guardrail, also
// when the API server's clock runs a little behind this machine's, and
// whatever the tenant's TTL and max_ttl.
func TestBenchClaimsPassTheGuardrail(t *testing.T) {
	spec := specgen.Generate(specgen.Options{Platform: "bench", Tenants: 1})
	p, diags := schemas.LoadSource("platform.hcl", []byte(spec), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, c := range []struct{ ttl, maxTTL time.Duration }{
		{5 * time.Minute, 2 * time.Hour},
		{10 * time.Minute, 5 * time.Minute}, // a TTL above max_ttl: the guardrail caps it
		{5 * time.Minute, time.Minute},
	} {
		tn := p.Tenants[0]
		tn.Claims.TTL, tn.Claims.MaxTTL = c.ttl, c.maxTTL
		g := manifests.Guardrails(p, tn)[0]
		if g.Policy.Name != manifests.GuardrailName(p, tn, "claims") {
			t.Fatalf("the first guardrail is %s", g.Policy.Name)
		}
		cl := &claimer{o: ClaimsOptions{Namespace: tn.Namespace, TTL: c.ttl, MaxTTL: c.maxTTL}, run: "r"}
		for _, skew := range []time.Duration{0, -25 * time.Second} {
			now := time.Now()
			u := cl.claim("bench-r-1", "agent", now)
			u.SetCreationTimestamp(metav1.NewTime(now.Add(skew)))
			r, err := vaptest.Admit(g.Policy, u.Object, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				t.Errorf("ttl %s, max_ttl %s, the server's clock %s off: refused: %s", c.ttl, c.maxTTL, skew, r.Message)
			}
		}
		// Not a claim that outlives max_ttl by a wide margin either.
		made := time.Now()
		at, _ := time.Parse(time.RFC3339, fmt.Sprint(cl.claim("x", "agent", made).Object["spec"].(map[string]any)["lifecycle"].(map[string]any)["shutdownTime"]))
		if left := at.Sub(made); left < c.maxTTL/2-time.Second || left > c.maxTTL {
			t.Errorf("max_ttl %s: the claim's session ends in %s", c.maxTTL, left)
		}
	}
}
