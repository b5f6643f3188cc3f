package policy

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

func init() {
	register(Rule{
		ID: "PDK-307", Title: "Capabilities kept", Severity: Error, Kind: Static,
		Control:   "Every Linux capability is dropped",
		Checklist: []string{"H10"},
		Fix:       "Remove add_capabilities.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if len(tpl.AddCapabilities) > 0 {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("add_capabilities", tpl.Src),
						"Template %q of tenant %q adds back capabilities %s.", tpl.Name, t.Name, strings.Join(tpl.AddCapabilities, ", "))
				}
			})
		},
	})
}
