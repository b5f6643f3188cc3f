package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-301", Title: "Template without a sandbox runtime class", Severity: Error, Kind: Static,
		Control:   "Generated code runs behind a second kernel boundary (gVisor or Kata), not on the host kernel",
		Checklist: []string{"H9", "L3"},
		Fix:       `Set runtime_class to a runtime class with a gVisor ("runsc") or Kata handler.`,
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.RuntimeClass == "" {
					c.report(templateAddr(t, tpl), tpl.Src,
						"Template %q of tenant %q sets no runtime class: its sandboxes share the host kernel.", tpl.Name, t.Name)
				}
			})
		},
	})
}
