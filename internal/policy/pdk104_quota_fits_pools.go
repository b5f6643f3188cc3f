package policy

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddock-platform/paddock/internal/model"
)

func init() {
	register(Rule{
		ID: "PDK-104", Title: "Warm pools do not fit the quota", Severity: Warning, Kind: Static,
		Control:   "The quota is sized for the fleet it caps, so warm pools fill and sessions start warm",
		Checklist: []string{"H2"},
		Fix:       "Raise the tenant's quota, or lower the warm pools' replicas or the templates' limits.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if t.Quota.Disabled || len(t.WarmPools) == 0 {
					return
				}
				var pods int64
				var cpu, mem, eph resource.Quantity
				for i := range t.WarmPools {
					wp := &t.WarmPools[i]
					pods += int64(wp.Replicas)
					for j := range t.Templates {
						if tpl := &t.Templates[j]; tpl.Name == wp.Template {
							for _, add := range []struct {
								sum *resource.Quantity
								val string
							}{{&cpu, tpl.Resources.LimitsCPU}, {&mem, tpl.Resources.LimitsMemory}, {&eph, tpl.Resources.LimitsEphemeralStorage}} {
								if q, err := resource.ParseQuantity(add.val); err == nil {
									q.Mul(int64(wp.Replicas))
									add.sum.Add(q)
								}
							}
						}
					}
				}
				src := orSrc(t.Quota.Src, t.Src)
				if pods > int64(t.Quota.Pods) {
					c.report(tenantAddr(t), t.Quota.Attrs.At("pods", src),
						"Tenant %q keeps %d warm sandboxes, but its quota allows %d pods.", t.Name, pods, t.Quota.Pods)
				}
				for _, dim := range []struct {
					name, attr, quota string
					sum               resource.Quantity
				}{{"CPU limits", "cpu", t.Quota.LimitsCPU, cpu}, {"memory limits", "memory", t.Quota.LimitsMemory, mem}, {"ephemeral storage limits", "ephemeral_storage", t.Quota.LimitsEphemeralStorage, eph}} {
					q, err := resource.ParseQuantity(dim.quota)
					if err == nil && dim.sum.Cmp(q) > 0 {
						c.report(tenantAddr(t), t.Quota.Attrs.At(dim.attr, src),
							"Tenant %q's warm pools need %s of %s, but its quota allows %s.", t.Name, dim.sum.String(), dim.name, q.String())
					}
				}
			})
		},
	})
}
