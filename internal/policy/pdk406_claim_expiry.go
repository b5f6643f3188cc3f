package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-406", Title: "Claims never expire", Severity: Error, Kind: Static,
		Control: "Every session has a hard expiry, even if the orchestrator crashes: admission refuses a claim without spec.lifecycle.ttlSecondsAfterFinished " +
			"(finished claims are reaped) and, unless max_ttl is none, one without spec.lifecycle.shutdownTime or with one later than max_ttl after " +
			"its metadata.creationTimestamp; the claim controller ends the session at that time",
		Checklist: []string{"H15", "L8", "L9"},
		Fix:       `Set claims.ttl and claims.max_ttl to durations (defaults "10m" and "4h") instead of "none".`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				src := orSrc(t.Claims.Src, t.Src)
				if t.Claims.TTL == 0 {
					c.report(tenantAddr(t), t.Claims.Attrs.At("ttl", src),
						"Claims of tenant %q are never reaped after they finish (no ttlSecondsAfterFinished).", t.Name)
				}
				if t.Claims.MaxTTL == 0 {
					c.report(tenantAddr(t), t.Claims.Attrs.At("max_ttl", src),
						"Sessions of tenant %q have no maximum lifetime: claims need no spec.lifecycle.shutdownTime and may set any, so an agent stuck in a loop runs forever.", t.Name)
				}
			})
		},
	})
}
