package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-103", Title: "No ResourceQuota", Severity: Error, Kind: Static,
		Control:   "A quota caps the tenant's whole fleet: a runaway agent loop exhausts its own namespace, not the cluster",
		Checklist: []string{"H2", "L8"},
		Fix:       "Remove `enabled = false` from the tenant's quota block, and size pods, cpu, memory and ephemeral_storage instead.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if t.Quota.Disabled {
					c.report(tenantAddr(t), t.Quota.Attrs.At("enabled", orSrc(t.Quota.Src, t.Src)),
						"Tenant %q has no ResourceQuota: nothing caps its pods, CPU, memory or ephemeral storage.", t.Name)
				}
			})
		},
	})
}
