package rules

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-010", Title: "KVM pool machine series",
		Hint: "Use an Intel machine series with nested virtualisation for kvm pools: " + strings.ToUpper(strings.Join(NestedVirtSeries, ", ")) + " (e.g. n2-standard-4).",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationKVM) {
				if ok, why := SupportsNestedVirtualization(np.MachineType); !ok {
					out = append(out, v(poolAddr(np), "machine_type", "%s cannot run Kata: %s", np.MachineType, why))
				}
			}
			return out
		},
	})
}
