package policy

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

// systemNamespaces hold cluster components; a tenant there shares their fence.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease", "agent-sandbox-system", "gke-managed-system", "gmp-system", "cilium"}

func init() {
	register(Rule{
		ID: "PDK-102", Title: "Tenant in a shared or system namespace", Severity: Error, Kind: Static,
		Control:   "Agents get a namespace of their own, so quotas, policies and network rules apply to agents and nothing else",
		Checklist: []string{"H1"},
		Fix:       `Set namespace to a dedicated name (the default is "agents-<tenant>").`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if contains(systemNamespaces, t.Namespace) || strings.HasPrefix(t.Namespace, "kube-") || strings.HasPrefix(t.Namespace, "gke-") {
					c.report(tenantAddr(t), t.Attrs.At("namespace", t.Src),
						"Tenant %q lives in namespace %q, which cluster components share.", t.Name, t.Namespace)
				}
			})
		},
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
