package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-306", Title: "Writable root filesystem", Severity: Error, Kind: Static,
		Control:   "The image is immutable at run time (readOnlyRootFilesystem); writes go to /tmp and the workspace only",
		Checklist: []string{"H10"},
		Fix:       "Remove `read_only_root = false`; give the agent a workspace block or a bigger tmp_size for what it writes.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if tpl.WritableRootFilesystem {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("read_only_root", tpl.Src),
						"Template %q of tenant %q gives its sandboxes a writable root filesystem.", tpl.Name, t.Name)
				}
			})
		},
	})
}
