package specgen

import (
	"strings"
	"testing"
)

// FirstTenant shifts the tenants' numbers, so the specs of several
// platforms hold no tenant in common.
func TestFirstTenant(t *testing.T) {
	spec := Generate(Options{Platform: "p", Tenants: 2, FirstTenant: 3})
	for _, want := range []string{`tenant "t0003"`, `tenant "t0004"`, "api.tenant-0003.example.com"} {
		if !strings.Contains(spec, want) {
			t.Errorf("no %s in\n%s", want, spec)
		}
	}
	if n := strings.Count(spec, "\ntenant "); n != 2 {
		t.Errorf("%d tenants, want 2", n)
	}
	if strings.Contains(spec, `tenant "t0000"`) || strings.Contains(spec, `tenant "t0005"`) {
		t.Errorf("a tenant outside 3..4:\n%s", spec)
	}
	if Generate(Options{Platform: "p", Tenants: 1}) != Generate(Options{Platform: "p", Tenants: 1, FirstTenant: 0}) {
		t.Error("FirstTenant 0 is not the default")
	}
}
