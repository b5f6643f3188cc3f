package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-303", Title: "Sandbox may run as root", Severity: Error, Kind: Static,
		Control:   "Sandboxes run as a non-root UID (runAsNonRoot)",
		Checklist: []string{"H9"},
		Fix:       "Remove `run_as_non_root = false` (and any run_as_user = 0).",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.AllowRoot {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("run_as_non_root", tpl.Src),
						"Template %q of tenant %q allows its sandboxes to run as root.", tpl.Name, t.Name)
				}
			})
		},
	})
}
