package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-002", Title: "Release channel",
		Hint: `Use release_channel = "rapid", "regular" or "stable".`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			switch p.Cluster.ReleaseChannel {
			case gcpinputs.ChannelRapid, gcpinputs.ChannelRegular, gcpinputs.ChannelStable:
				return nil
			}
			return []Violation{v("cluster", "release_channel", "release channel %q is not RAPID, REGULAR or STABLE (GKE's auto-upgrades need a channel)", p.Cluster.ReleaseChannel)}
		},
	})
}
