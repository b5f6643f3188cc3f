package policy

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

func init() {
	register(Rule{
		ID: "PDK-308", Title: "Container limits missing", Severity: Error, Kind: Static,
		Control:   "Every sandbox container has CPU, memory and ephemeral storage limits: one session cannot fill a node's disk or starve its neighbours",
		Checklist: []string{"H11", "L8"},
		Fix:       "Remove the resources from the template's `unbounded` list, and set limits that fit the workload.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				var missing []string
				r := tpl.Resources
				for _, l := range []struct{ name, val string }{{"cpu", r.LimitsCPU}, {"memory", r.LimitsMemory}, {"ephemeral_storage", r.LimitsEphemeralStorage}} {
					if l.val == "" {
						missing = append(missing, l.name)
					}
				}
				if len(missing) > 0 {
					c.report(templateAddr(t, tpl), tpl.Attrs.At("resources.unbounded", tpl.Src),
						"Template %q of tenant %q sets no %s limit.", tpl.Name, t.Name, strings.Join(missing, ", "))
				}
			})
		},
	})
}
