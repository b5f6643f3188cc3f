package policy

import "github.com/paddock-platform/paddock/internal/model"

// rulePoolUpdateStrategy is the ID `up` and `verify` look up to say whose
// waiver keeps a pool's stale sandboxes.
const rulePoolUpdateStrategy = "PDK-410"

func init() {
	register(Rule{
		ID: rulePoolUpdateStrategy, Title: "Warm pool keeps sandboxes of an old template", Severity: Error, Kind: Static,
		Control: "A template change reaches the next session: a warm pool replaces its unclaimed sandboxes built from an older template at once " +
			"(spec.updateStrategy.type Recreate), so a fixed image or a tighter setting is not held back until claims use the old ones up",
		Checklist: []string{"H13", "H14"},
		Fix:       `Remove update_strategy (the default is "Recreate"); ` + "`paddock verify` (V07) reports a pool that still holds stale sandboxes.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.WarmPools {
					wp := &t.WarmPools[i]
					if wp.UpdateStrategy != model.UpdateOnReplenish {
						continue
					}
					c.report(warmPoolAddr(t, wp), wp.Attrs.At("update_strategy", wp.Src),
						"Warm pool %q of tenant %q keeps its unclaimed sandboxes when template %q changes (update strategy %s): claims get sandboxes of the old template until they are used up.",
						wp.Name, t.Name, wp.Template, wp.UpdateStrategy)
				}
			})
		},
	})
}

// StaleSandboxWaiver is the waiver in rep that lets warm pool wp of tenant t
// keep sandboxes of an old template (PDK-410), or nil when none does.
func StaleSandboxWaiver(rep *Report, t *model.Tenant, wp *model.WarmPool) *model.Waiver {
	for i := range rep.Waived {
		f := &rep.Waived[i]
		if f.RuleID == rulePoolUpdateStrategy && f.Object == warmPoolAddr(t, wp) {
			return f.Waiver
		}
	}
	return nil
}
