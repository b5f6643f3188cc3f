package rules

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-018", Title: "FQDN allow-lists need FQDN network policy",
		Hint: "Set cluster { fqdn_network_policy = true } (sticky: turning it off later replaces the cluster), or drop the tenants' fqdns.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if len(p.FQDNNamespaces) == 0 || p.Cluster.FQDNNetworkPolicy {
				return nil
			}
			return []Violation{v("cluster", "fqdn_network_policy", "tenant namespaces %s allow egress by host name (fqdns), which GKE enforces only with FQDN network policy, and the cluster leaves it off",
				strings.Join(p.FQDNNamespaces, ", "))}
		},
	})
}
