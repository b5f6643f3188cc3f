package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-201", Title: "Service account token mounted into sandboxes", Severity: Error, Kind: Static,
		Control:   "Code in the sandbox finds no Kubernetes credential to steal: the agent runtime's token is never mounted",
		Checklist: []string{"H5", "L4", "L7"},
		Fix:       "Remove `automount_token = true`. An in-pod tool gateway that must call the API server gets identity.tool_gateway_token instead: audience-bound and short-lived.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.AutomountServiceAccountToken {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("automount_token", tpl.Src),
						"Template %q of tenant %q mounts the agent runtime's service account token.", tpl.Name, t.Name)
				}
			})
		},
	})
}
