package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-001", Title: "Cluster location",
		Hint: `Set the GCP project id, a region ("europe-west4") or zone ("europe-west4-a") and a cluster name of lowercase letters, digits and dashes.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			c := p.Cluster
			if !projectRE.MatchString(c.Project) {
				out = append(out, v("cluster", "project", "project %q is not a GCP project id", c.Project))
			}
			if !regionRE.MatchString(c.Location) && !zoneRE.MatchString(c.Location) {
				out = append(out, v("cluster", "location", "location %q is neither a region nor a zone", c.Location))
			}
			if !clusterRE.MatchString(c.Name) {
				out = append(out, v("cluster", "name", "cluster name %q is not a valid GKE cluster name (1-40 characters, [a-z0-9-], starting with a letter)", c.Name))
			}
			return out
		},
	})
}
