package policy

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

// The egress gateway's rules (issue 38): a key the gateway holds has no
// business in a sandbox, and a tenant with a gateway that injects keys
// should let it hold the others too.

// gatewayCredentialSecret reports whether secret is the Secret of a
// credential of t's gateway.
func gatewayCredentialSecret(t *model.Tenant, secret string) bool {
	return slices.Contains(t.GatewayCredentialSecrets(), secret)
}

func init() {
	register(Rule{
		ID: "PDK-611", Title: "Gateway credential also in the sandbox", Severity: Error, Kind: Static,
		Control:   "A key the egress gateway injects never enters a sandbox: a prompt-injected agent cannot read it, print it or send it anywhere its egress allows",
		Checklist: []string{"H20", "L5", "L7"},
		Fix:       "Remove the secret_env block: the egress gateway injects the key into every request to its destination, and the sandbox calls the destination through the gateway without it.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				for i := range tpl.SecretEnv {
					se := &tpl.SecretEnv[i]
					if gatewayCredentialSecret(t, se.Secret) {
						c.report(templateAddr(t, tpl)+".secret_env."+se.Name, se.Attrs.At("secret", se.Src),
							"Template %q of tenant %q reads Secret %q into %s, but that Secret is a credential of the tenant's egress gateway: the key the gateway holds is in every sandbox too.",
							tpl.Name, t.Name, se.Secret, se.Name)
					}
				}
			})
		},
	})
	register(Rule{
		ID: "PDK-612", Title: "API key in the sandbox beside an egress gateway", Severity: Warning, Kind: Static,
		Control:   "Where a tenant has an egress gateway that injects keys, the sandboxes hold none: every API key lives in the gateway, which checks each destination and never shows the key",
		Checklist: []string{"H20", "L5"},
		Fix:       "Give the API a destination block in the tenant's egress_gateway with a credential naming the Secret, remove the secret_env block, and call the API through the gateway.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				if len(t.GatewayCredentialSecrets()) == 0 {
					return
				}
				for i := range tpl.SecretEnv {
					se := &tpl.SecretEnv[i]
					if gatewayCredentialSecret(t, se.Secret) || !credentialNameRe.MatchString(se.Name) {
						continue // PDK-611's, or no key by its name
					}
					c.report(templateAddr(t, tpl)+".secret_env."+se.Name, se.Src,
						"Template %q of tenant %q puts %s from Secret %q into every sandbox, while the tenant's egress gateway can hold keys: an agent can read this one and send it wherever its egress allows.",
						tpl.Name, t.Name, se.Name, se.Secret)
				}
			})
		},
	})
	register(Rule{
		ID: "PDK-507", Title: "Direct route around the egress gateway", Severity: Warning, Kind: Static,
		Control:   "A tenant with an egress gateway reaches the gateway's destinations through it only, where redirects, addresses, budgets and the audit line are checked",
		Checklist: []string{"H18", "L5"},
		Fix:       "Narrow the allow, proxy or fqdns entry so it no longer reaches public addresses on the destination's port; sandboxes call the destination through the egress gateway.",
		check: func(c *checker) {
			c.eachEgressFinding(func(t *model.Tenant, r *egressRule) string {
				if t.EgressGateway == nil || r.orchestratorOnly {
					return ""
				}
				var out []string
				for _, d := range t.EgressGateway.Destinations {
					if !r.allowsPort(d.Port) {
						continue
					}
					for _, pr := range r.peers {
						if bypasses(pr, d.Host) && !slices.Contains(out, d.Host) {
							out = append(out, d.Host)
						}
					}
				}
				return strings.Join(out, ", ")
			}, func(t *model.Tenant, f egressFinding) {
				c.report(tenantAddr(t), f.origin.Src,
					"Tenant %q lets its sandboxes reach %s directly, around its egress gateway %s.", t.Name, f.what, f.through())
			})
		},
	})
}

// gatewayNeverReached are the ranges a direct route to a public destination
// cannot go through: private, CGNAT, loopback and link-local space.
var gatewayNeverReached = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7", "fe80::/10"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// bypasses reports whether a sandbox egress peer may reach the public
// destination host directly: every address, a range reaching beyond
// private space, or a name pattern matching host.
func bypasses(pr peer, host string) bool {
	switch pr.kind {
	case peerWorld:
		return true
	case peerCIDR:
		for _, never := range gatewayNeverReached {
			if never.Bits() <= pr.prefix.Bits() && never.Contains(pr.prefix.Addr()) {
				return false
			}
		}
		return true
	case peerName:
		return fqdnMatches(pr.name, host)
	}
	return false
}

// fqdnMatches reports whether the allow-list entry f ("api.x.com",
// "*.x.com") matches host; a wildcard is taken to match any depth under it.
func fqdnMatches(f, host string) bool {
	if suffix, ok := strings.CutPrefix(f, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return f == host
}
