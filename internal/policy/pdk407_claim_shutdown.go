package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-407", Title: "Claims not deleted at expiry", Severity: Error, Kind: Static,
		Control:   "An expired claim deletes its sandbox (shutdownPolicy Delete): a spent sandbox is never kept or reused",
		Checklist: []string{"H15", "H14", "L9"},
		Fix:       `Remove shutdown_policy (the default is "Delete").`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				switch t.Claims.ShutdownPolicy {
				case "", model.ShutdownDelete, model.ShutdownDeleteForeground:
					return
				}
				c.report(tenantAddr(t), t.Claims.Attrs.At("shutdown_policy", orSrc(t.Claims.Src, t.Src)),
					"Claims of tenant %q use shutdown policy %q: expired claims are kept.", t.Name, t.Claims.ShutdownPolicy)
			})
		},
	})
}
