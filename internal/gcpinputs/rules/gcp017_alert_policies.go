package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-017", Title: "Alert policies",
		Hint: "Set sandbox_max_lifetime to at least a minute (a little above the claims' max TTL), or leave it unset.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if p.Alerts == nil {
				return nil
			}
			var out []Violation
			if d := p.Alerts.SandboxMaxLifetime; d != 0 && d.Seconds() < 60 {
				out = append(out, v("alerts", "sandbox_max_lifetime", "%s is below a minute: every sandbox would alert", d))
			}
			if !p.Alerts.QuotaSaturation && p.Alerts.SandboxMaxLifetime == 0 {
				out = append(out, v("alerts", "", "no alert selected"))
			}
			return out
		},
	})
}
