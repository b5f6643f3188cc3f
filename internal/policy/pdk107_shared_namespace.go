package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-107", Title: "Two tenants share a namespace", Severity: Error, Kind: Static, Language: true,
		Control:   "A tenant is a trust boundary with a namespace of its own",
		Checklist: []string{"H1", "H14"},
		Fix:       "Give each tenant its own namespace.",
		check: func(c *checker) {
			first := map[string]*model.Tenant{}
			c.eachTenant(func(t *model.Tenant) {
				if o, dup := first[t.Namespace]; dup {
					c.report(tenantAddr(t), t.Attrs.At("namespace", t.Src),
						"Tenants %q and %q share namespace %q.", o.Name, t.Name, t.Namespace)
					return
				}
				first[t.Namespace] = t
			})
		},
	})
}
