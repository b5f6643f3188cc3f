package policy

import (
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// enforceLabel is the namespace label that sets the enforced level.
const enforceLabel = "pod-security.kubernetes.io/enforce"

func init() {
	register(Rule{
		ID: "PDK-101", Title: "Namespace not restricted", Severity: Error, Kind: Static,
		Control:   "The API server itself rejects pods that ask for privilege escalation, host namespaces or root, whoever wrote them (Pod Security Standards restricted)",
		Checklist: []string{"H1", "L3"},
		Fix:       `Remove pod_security from the tenant (the default is "restricted"), or waive PDK-101 for the tenant with the reason its pods need baseline.`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				// Judge the Namespace object Paddock applies, not the field.
				ns := manifests.Namespace(c.p, *t)
				if level := ns.Labels[enforceLabel]; level != model.PodSecurityRestricted {
					c.report(tenantAddr(t), t.Attrs.At("pod_security", t.Src),
						"Tenant %q enforces Pod Security level %q on namespace %q instead of \"restricted\" (audit and warn stay at restricted).", t.Name, level, t.Namespace)
				}
			})
		},
	})
}
