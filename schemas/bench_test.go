package schemas

import (
	"fmt"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/schemas/specgen"
)

func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		spec, _ := specgen.OfLines(n)
		src := []byte(spec)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				p, diags := LoadSource("bench.hcl", src, LoadOptions{Environ: []string{}})
				if p == nil {
					b.Fatal(diags)
				}
			}
			b.ReportMetric(float64(strings.Count(string(src), "\n")), "lines")
		})
	}
}

// BenchmarkManyLocals shows the cost of locals growing with their number,
// not its square: compare ns/op across the sizes.
func BenchmarkManyLocals(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000} {
		src := manyLocals(n)
		b.Run(fmt.Sprintf("locals=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p, diags := LoadSource("spec.hcl", src, LoadOptions{Environ: []string{}}); p == nil {
					b.Fatal(diags)
				}
			}
		})
	}
}

func TestGeneratedSpecLoads(t *testing.T) {
	for _, n := range []int{1000, 5000} {
		src, got := specgen.OfLines(n)
		if got < n {
			t.Errorf("specgen.OfLines(%d) has %d lines", n, got)
		}
		if _, diags := LoadSource("bench.hcl", []byte(src), LoadOptions{Environ: []string{}}); diags.HasErrors() {
			t.Fatal(diags)
		}
	}
}
