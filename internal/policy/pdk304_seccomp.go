package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-304", Title: "Seccomp unconfined", Severity: Error, Kind: Static,
		Control:   "The container runtime's default seccomp profile filters syscalls (seccomp RuntimeDefault)",
		Checklist: []string{"H9"},
		Fix:       `Remove seccomp_profile (the default is "RuntimeDefault"), or use a "Localhost/<profile>" installed on the nodes.`,
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.Seccomp == model.SeccompUnconfined {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("seccomp_profile", tpl.Src),
						"Template %q of tenant %q runs its sandboxes without a seccomp profile.", tpl.Name, t.Name)
				}
			})
		},
	})
}
