package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-501", Title: "No default-deny network policy", Severity: Error, Kind: Static,
		Control:   "All ingress and egress of the namespace is denied by default; only named holes are open",
		Checklist: []string{"H16", "L5"},
		Fix:       "Remove `default_deny = false` from the tenant's egress block, and list what sandboxes need in fqdns, allow or proxy.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				te := c.egress(t)
				at := t.Egress.Attrs.At("default_deny", orSrc(t.Egress.Src, t.Src))
				switch {
				case te.err != nil:
					// Nothing can be said of its holes: that is no fence either.
					c.report(tenantAddr(t), at, "The network policies of tenant %q cannot be built (%v), so none of its egress is known to be fenced.", t.Name, te.err)
				case !te.defaultDeny:
					c.report(tenantAddr(t), at,
						"Tenant %q has no default-deny NetworkPolicy: its sandboxes can reach anything, including each other.", t.Name)
				}
			})
		},
	})
}
