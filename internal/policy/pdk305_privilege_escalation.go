package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-305", Title: "Privilege escalation allowed", Severity: Error, Kind: Static,
		Control:   "No process in a sandbox can gain more privileges than it started with (allowPrivilegeEscalation: false, not privileged)",
		Checklist: []string{"H10"},
		Fix:       "Remove `allow_privilege_escalation = true` and `privileged = true`.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.Privileged {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("privileged", tpl.Src),
						"Template %q of tenant %q runs privileged containers: every device and capability of the node.", tpl.Name, t.Name)
				}
				if tpl.AllowPrivilegeEscalation {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("allow_privilege_escalation", tpl.Src),
						"Template %q of tenant %q allows privilege escalation (setuid binaries, file capabilities).", tpl.Name, t.Name)
				}
			})
		},
	})
}
