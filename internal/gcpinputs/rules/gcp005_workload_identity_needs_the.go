package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-005", Title: "Workload identity needs the workload pool",
		Hint: "Keep workload_identity on for the cluster (the default), or give no tenant identity cloud access.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if !p.Cluster.DisableWorkloadIdentity {
				return nil
			}
			var out []Violation
			for _, wi := range p.WorkloadIdentities {
				out = append(out, v(wiAddr(wi), "", "needs GKE Workload Identity (the %s pool), which the cluster turns off", gcpinputs.WorkloadPool(p.Cluster.Project)))
			}
			return out
		},
	})
}
