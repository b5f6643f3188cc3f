// Package gateway is Paddock's egress gateway: the one route out of a
// tenant's sandboxes to the APIs they may call, holding the credentials for
// those APIs so that no key ever enters a sandbox (issue 38).
//
// A sandbox speaks plain HTTP to the gateway inside the cluster and names the
// destination by the request's Host (or by an absolute-form request URI, the
// gateway used as an HTTP proxy). The gateway guarantees, for every request:
//
//   - Only listed destinations. A host not in the configuration is refused
//     with 403 and a short reason that names no other destination. An IP
//     literal is refused: the sandbox never chooses the address. CONNECT and
//     protocol upgrades are refused: a tunnel would hide the requests the
//     gateway exists to judge.
//   - Only checked addresses. The gateway resolves the destination itself and
//     refuses, before any socket is opened, a name whose every address is
//     forbidden: loopback, link-local (the metadata server), private (RFC 1918,
//     fc00::/7), carrier-grade NAT, unspecified, multicast, reserved, and the
//     cluster's pod, service and node addresses. The same judgement runs again
//     in the dialer's Control hook on the address actually being connected, so
//     a name that answers differently between the check and the dial (DNS
//     rebinding) gets nowhere. An explicit allow-list may reopen loopback,
//     private and CGNAT ranges (for tests and local targets only); it never
//     reopens link-local, multicast, unspecified or the cluster's ranges.
//   - TLS to the destination, its certificate verified against the system
//     roots or a configured CA bundle, with the destination's name as
//     ServerName. The gateway's environment proxies (HTTP_PROXY) are ignored.
//   - No redirect is followed: a 3xx goes back to the sandbox untouched, and
//     the next request is judged on its own.
//   - Credentials: the sandbox's own are stripped (Authorization,
//     Proxy-Authorization, Cookie, the common API-key headers and the header
//     the destination's credential uses), and the destination's credential is
//     injected. Set-Cookie is dropped from responses. The key appears in no
//     log line or error text; a response header or body (identity-encoded)
//     that echoes it has it masked, byte for byte.
//   - The pod address is not forwarded: Forwarded and X-Forwarded-* are
//     removed and not re-added, and hop-by-hop headers are dropped.
//   - Budgets per sandbox: requests per minute, bytes per minute, concurrent
//     requests and connections; 429 with Retry-After when over, while other
//     sandboxes are served. A request body over the limit gets 413; a
//     response over the limit is refused (known length) or cut (streamed).
//   - One audit line per request (log/slog JSON): sandbox, claim,
//     destination, method, path without the query string, status, bytes in
//     and out, duration. Never bodies, query strings or credentials.
//   - Bounded memory: bodies stream (the masking holds back at most a key's
//     length), header sizes are limited, and the server and transport have
//     timeouts.
//
// The caller is identified by its pod address through an Identifier, or by
// a projected service-account token reviewed by a TokenReviewer; both are
// interfaces that the cluster layer implements (internal/gateway/cluster:
// informers on the tenant namespace's pods and Sandboxes, the TokenReview
// API). A caller is named by its pod, its Sandbox and the SandboxClaim the
// Sandbox serves ("" for a warm one); an address that is no sandbox pod of
// the namespace is refused. Budgets are the Sandbox's: a pod it recreates
// at a new address keeps them.
package gateway
