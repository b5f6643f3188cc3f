package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-004", Title: "FQDN network policy needs Dataplane V2",
		Hint: "Keep dataplane_v2 on (the default) or drop the FQDN egress allowlists.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if p.Cluster.FQDNNetworkPolicy && p.Cluster.DisableDataplaneV2 {
				return []Violation{v("cluster", "dataplane_v2", "FQDN network policies (egress allowlists by host name) are only enforced by GKE Dataplane V2, which is turned off")}
			}
			return nil
		},
	})
}
