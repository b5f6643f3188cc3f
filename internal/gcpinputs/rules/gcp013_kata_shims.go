package rules

import (
	"fmt"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-013", Title: "Kata shims",
		Hint: `Use shims "qemu" and/or "clh".`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seen := map[string]bool{}
			for i, s := range p.Kata.Shims {
				if _, _, ok := gcpinputs.KataOverhead(s); !ok {
					out = append(out, v("kata", fmt.Sprintf("shims[%d]", i), "unknown Kata shim %q (want qemu or clh)", s))
				}
				if seen[s] {
					out = append(out, v("kata", fmt.Sprintf("shims[%d]", i), "shim %q listed twice", s))
				}
				seen[s] = true
			}
			if len(p.PoolsOf(gcpinputs.IsolationKVM)) == 0 && (len(p.Kata.Shims) > 0 || p.Kata.Image != "") {
				out = append(out, v("kata", "", "Kata is configured but no node pool has isolation kvm"))
			}
			return out
		},
	})
}
