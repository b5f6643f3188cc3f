package drift

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// BenchmarkCompare100Tenants is the whole-object comparison of a no-op
// drift at 100 tenants: every object Paddock builds against a live copy of
// itself (the reference and live objects decoded as the server sends them).
// It is the CPU a no-op `up` or `drift` spends beside its lists.
func BenchmarkCompare100Tenants(b *testing.B) {
	dir := b.TempDir()
	spec := specgen.Generate(specgen.Options{Platform: "bench", Tenants: 100})
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := specload.Load(dir, specload.Options{}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	built, err := manifests.Build(p)
	if err != nil {
		b.Fatal(err)
	}
	type pair struct {
		expected map[string]any
		live     *unstructured.Unstructured
	}
	var pairs []pair
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			raw, err := u.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			var live unstructured.Unstructured
			if err := live.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
			pairs = append(pairs, pair{expected: Comparable(u.Object), live: &live})
		}
	}
	b.ReportMetric(float64(len(pairs)), "objects")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			if d := Compare(p.expected, p.live, Options{}); len(d) != 0 {
				b.Fatalf("%s: %v", p.live.GetName(), paths(d))
			}
		}
	}
}
