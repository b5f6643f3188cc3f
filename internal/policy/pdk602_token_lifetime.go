package policy

import (
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

// maxTokenLifetime is the longest in-pod token the guide accepts.
const maxTokenLifetime = time.Hour

func init() {
	register(Rule{
		ID: "PDK-602", Title: "In-pod token lives longer than an hour", Severity: Warning, Kind: Static,
		Control:   "A token inside a sandbox is audience-bound and short-lived: a stolen copy is a one-hour problem",
		Checklist: []string{"H21"},
		Fix:       `Set tool_gateway_token.expiration to "1h" or less (the default is "1h").`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if tok := t.Identity.ToolGatewayToken; tok != nil && tok.Expiration > maxTokenLifetime {
					c.report(tenantAddr(t), tok.Attrs.At("expiration", tok.Src),
						"Tenant %q mounts a tool gateway token valid for %s.", t.Name, tok.Expiration)
				}
			})
		},
	})
}
