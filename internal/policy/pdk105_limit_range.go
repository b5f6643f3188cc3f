package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-105", Title: "No LimitRange", Severity: Error, Kind: Static,
		Control:   "Any container that sets no requests or limits of its own still gets bounded ones",
		Checklist: []string{"H3", "L8"},
		Fix:       "Remove `enabled = false` from the tenant's limit_range block.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if t.LimitRange.Disabled {
					c.report(tenantAddr(t), t.LimitRange.Attrs.At("enabled", orSrc(t.LimitRange.Src, t.Src)),
						"Tenant %q has no LimitRange: a container without limits of its own runs unbounded.", t.Name)
				}
			})
		},
	})
}
