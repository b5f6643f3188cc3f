package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-405", Title: "Warm pool crosses a trust boundary", Severity: Error, Kind: Static, Language: true,
		Control:   "A warm pool serves exactly one tenant: pool members are interchangeable, so a shared pool hands one team's sandbox to another",
		Checklist: []string{"H14", "L4"},
		Fix:       "Declare the template in the pool's own tenant; give every tenant pools of its own.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.WarmPools {
					wp := &t.WarmPools[i]
					own := false
					for j := range t.Templates {
						own = own || t.Templates[j].Name == wp.Template
					}
					if !own {
						c.report(warmPoolAddr(t, wp), wp.Src,
							"Warm pool %q of tenant %q keeps template %q warm, which tenant %q does not declare.", wp.Name, t.Name, wp.Template, t.Name)
					}
				}
			})
		},
	})
}
