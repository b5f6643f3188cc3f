package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-601", Title: "Secret does not fail closed", Severity: Error, Kind: Static,
		Control:   "A sandbox whose credentials Secret is missing does not start: no silent unauthenticated run, no fallback to a shared key",
		Checklist: []string{"H20"},
		Fix:       "Remove `optional = true` from the secret_env block.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				for i := range tpl.SecretEnv {
					if se := &tpl.SecretEnv[i]; se.Optional {
						c.report(templateAddr(t, tpl)+".secret_env."+se.Name, se.Attrs.At("optional", se.Src),
							"Template %q of tenant %q starts sandboxes without %s when Secret %q is missing.", tpl.Name, t.Name, se.Name, se.Secret)
					}
				}
			})
		},
	})
}
