package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
)

// Caller is who sent a request: the sandbox pod and the claim it serves.
type Caller struct {
	Namespace string
	// Pod is the sandbox's pod; "" when only the sandbox is known.
	Pod     string
	Sandbox string
	// Claim is the SandboxClaim the sandbox serves; "" for a warm sandbox
	// no claim has taken yet.
	Claim string
}

// key is the caller's budget key: the sandbox, not its pod or address, so
// a pod the sandbox recreates (a new address) keeps the budget it had.
func (c Caller) key() string { return c.Namespace + "/" + c.Sandbox }

// ErrUnknownCaller is returned by an Identifier or a TokenReviewer for a
// caller that is no sandbox of the tenant; the gateway refuses it (403).
var ErrUnknownCaller = errors.New("unknown caller")

// Identifier maps a pod address to the sandbox there. The cluster layer
// implements it with a pod informer; it must answer from memory, as it runs
// on every request.
type Identifier interface {
	Identify(ctx context.Context, addr netip.Addr) (Caller, error)
}

// TokenReviewer reviews a projected service-account token for an audience
// (the TokenReview API) and says which sandbox holds it.
type TokenReviewer interface {
	Review(ctx context.Context, token, audience string) (Caller, error)
}

// AddressIdentifier names each caller by its address alone: every address
// is its own sandbox, and budgets apply per address. It is for tests and
// for a gateway run outside a cluster; paddock-gateway in a cluster uses
// the pod informer of internal/gateway/cluster.
type AddressIdentifier struct{}

// Identify names the caller after its address.
func (AddressIdentifier) Identify(_ context.Context, addr netip.Addr) (Caller, error) {
	return Caller{Sandbox: addr.String()}, nil
}

// callerAddr is the request's peer address.
func callerAddr(r *http.Request) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap(), nil
}

// identify finds the caller of r by the configured mode.
func (g *Gateway) identify(r *http.Request) (Caller, error) {
	if g.cfg.Identify.Mode == IdentifyTokenReview {
		tok, ok := bearer(r.Header.Get("Proxy-Authorization"))
		if !ok {
			return Caller{}, ErrUnknownCaller
		}
		return g.reviewer.Review(r.Context(), tok, g.cfg.Identify.Audience)
	}
	addr, err := callerAddr(r)
	if err != nil {
		return Caller{}, ErrUnknownCaller
	}
	c, err := g.identifier.Identify(r.Context(), addr)
	if err != nil {
		return Caller{}, err
	}
	if c.Sandbox == "" {
		c.Sandbox = addr.String()
	}
	return c, nil
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
