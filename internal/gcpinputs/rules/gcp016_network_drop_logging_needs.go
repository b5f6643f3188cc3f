package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-016", Title: "Network drop logging needs Dataplane V2",
		Hint: "Keep dataplane_v2 on to log network policy denials, or drop the network_drops filter.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if !p.Cluster.DisableDataplaneV2 {
				return nil
			}
			var out []Violation
			for _, s := range p.AuditSinks {
				for _, e := range s.Filter.Events {
					if e == gcpinputs.EventNetworkDrops {
						out = append(out, v("audit_sink."+s.Name, "filters", "network policy logging (network_drops) exists only on Dataplane V2, which is turned off"))
					}
				}
			}
			return out
		},
	})
}
