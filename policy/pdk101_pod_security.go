package policy

import "github.com/paddock-platform/paddock/model"

func init() {
	register(Rule{
		ID: "PDK-101", Title: "Namespace not restricted", Severity: Error, Kind: Static,
		Control:   "The API server itself rejects pods that ask for privilege escalation, host namespaces or root, whoever wrote them (Pod Security Standards restricted)",
		Checklist: []string{"H1", "L3"},
		Fix:       `Remove pod_security from the tenant (the default is "restricted").`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if t.PodSecurity != "" && t.PodSecurity != model.PodSecurityRestricted {
					c.report(tenantAddr(t), t.Attrs.At("pod_security", t.Src),
						"Tenant %q enforces Pod Security level %q on namespace %q instead of \"restricted\".", t.Name, t.PodSecurity, t.Namespace)
				}
			})
		},
	})
}
