package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-007", Title: "Node pool isolation",
		Hint: `Sandbox pools have isolation = "gvisor" or "kvm"; the system pool has none.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			if p.SystemPool.Isolation != gcpinputs.IsolationNone {
				out = append(out, v("system_pool", "isolation", "the system pool runs GKE's own workloads and must not be sandboxed (GKE Sandbox cannot be a cluster's only pool)"))
			}
			for _, np := range p.NodePools {
				if np.Isolation != gcpinputs.IsolationGVisor && np.Isolation != gcpinputs.IsolationKVM {
					out = append(out, v(poolAddr(np), "isolation", "isolation %q is not gvisor or kvm", np.Isolation))
				}
				if np.Isolation != gcpinputs.IsolationKVM && (np.Shared || np.DisableSMT) {
					out = append(out, v(poolAddr(np), "isolation", "dedicated and smt only apply to kvm pools"))
				}
			}
			return out
		},
	})
}
