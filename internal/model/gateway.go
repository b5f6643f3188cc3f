package model

import (
	"runtime/debug"
	"slices"
	"strings"

	"github.com/paddock-platform/paddock/internal/gateway"
)

// EgressGateway is a tenant's egress gateway (issue 38): the one route out of
// its sandboxes to the APIs they may call. It holds the credentials for those
// APIs, so no key enters a sandbox; it resolves and checks each destination
// itself, and budgets every sandbox's traffic.
type EgressGateway struct {
	// Destinations are the only hosts the gateway reaches, in spec order.
	Destinations []GatewayDestination
	// Budgets apply to each sandbox separately.
	Budgets GatewayBudgets
	// Image is the gateway's image. On target local it is the image the
	// local cluster builds from this Paddock's own gateway (LocalGatewayImage);
	// elsewhere the spec names it by digest.
	Image string
	// Replicas of the gateway's Deployment. The budgets are each replica's:
	// with two replicas a sandbox may get up to twice its budget.
	Replicas int32
	// CABundle is PEM text: the CAs destination certificates are verified
	// against instead of the image's system roots; "" for those.
	CABundle string
	// AllowCIDRs reopen ranges the gateway refuses by default (private,
	// loopback, CGNAT) for test servers of target local only.
	AllowCIDRs []string
	Src        Range
	Attrs      Attrs
}

// GatewayDestination is one host the gateway reaches over TLS.
type GatewayDestination struct {
	// Host is a DNS name: never an IP literal or a wildcard.
	Host string
	// Port is the destination's TLS port.
	Port int32
	// Credential is injected into every request to Host; nil for none.
	Credential *GatewayCredential
	Src        Range
	Attrs      Attrs
}

// GatewayCredential is a key of a Secret in the tenant's namespace, which
// only the gateway mounts, presented as the header Header with the value
// Format ("{{key}}" standing for the key).
type GatewayCredential struct {
	Secret string
	Key    string
	Header string
	Format string
	Src    Range
	Attrs  Attrs
}

// GatewayBudgets are each sandbox's limits at the gateway.
type GatewayBudgets struct {
	RequestsPerMinute  int
	BytesPerMinute     int64
	ConcurrentRequests int
	Connections        int
	MaxRequestBytes    int64
	MaxResponseBytes   int64
	Src                Range
	Attrs              Attrs
}

// Defaults of the egress gateway. The numbers are the gateway's own
// defaults (internal/gateway), so the gateway and the spec agree on them.
const (
	DefaultGatewayPort               int32 = gateway.DefaultPort
	DefaultGatewayRequestsPerMinute        = gateway.DefaultRequestsPerMinute
	DefaultGatewayBytesPerMinute           = gateway.DefaultBytesPerMinute
	DefaultGatewayConcurrentRequests       = gateway.DefaultConcurrentRequests
	DefaultGatewayConnections              = gateway.DefaultConnections
	DefaultGatewayMaxRequestBytes          = gateway.DefaultMaxRequestBytes
	DefaultGatewayMaxResponseBytes         = gateway.DefaultMaxResponseBytes
	DefaultGatewayReplicas           int32 = 1

	// DefaultGatewayCredentialKey is the key of a credential's Secret.
	DefaultGatewayCredentialKey = "key"
	// DefaultGatewayCredentialHeader and DefaultGatewayBearerFormat are how a
	// credential is presented when the spec says nothing: a bearer token.
	DefaultGatewayCredentialHeader = "Authorization"
	DefaultGatewayBearerFormat     = "Bearer {{key}}"
	// DefaultGatewayFormat is the format of any other header: the key alone.
	DefaultGatewayFormat = "{{key}}"

	// GatewayServiceAccount is the gateway's own identity: the only one that
	// mounts the credentials' Secrets.
	GatewayServiceAccount = "egress-gateway"
	// GatewayListenPort is the port sandboxes reach the gateway on (plain
	// HTTP inside the cluster).
	GatewayListenPort int32 = 8080

	// The gateway container's requests and limits.
	GatewayRequestsCPU              = "100m"
	GatewayRequestsMemory           = "64Mi"
	GatewayRequestsEphemeralStorage = "16Mi"
	GatewayLimitsCPU                = "1"
	GatewayLimitsMemory             = "256Mi"
	GatewayLimitsEphemeralStorage   = "64Mi"

	// LocalGatewayRepository is the repository of the gateway image the
	// local cluster builds and imports (never pulled).
	LocalGatewayRepository = "localhost/paddock/gateway"
)

// DefaultEgressGateway is a gateway with every default and no destination.
func DefaultEgressGateway() EgressGateway {
	return EgressGateway{
		Replicas: DefaultGatewayReplicas,
		Budgets: GatewayBudgets{
			RequestsPerMinute:  DefaultGatewayRequestsPerMinute,
			BytesPerMinute:     DefaultGatewayBytesPerMinute,
			ConcurrentRequests: DefaultGatewayConcurrentRequests,
			Connections:        DefaultGatewayConnections,
			MaxRequestBytes:    DefaultGatewayMaxRequestBytes,
			MaxResponseBytes:   DefaultGatewayMaxResponseBytes,
		},
	}
}

// DefaultGatewayCredential is a credential from Secret secret with every
// default: its key "key", presented as Authorization: Bearer.
func DefaultGatewayCredential(secret string) GatewayCredential {
	return GatewayCredential{
		Secret: secret, Key: DefaultGatewayCredentialKey,
		Header: DefaultGatewayCredentialHeader, Format: DefaultGatewayBearerFormat,
	}
}

// GatewayCredentialSecrets are the Secrets t's gateway reads, sorted, each
// once; nil without a gateway.
func (t Tenant) GatewayCredentialSecrets() []string {
	if t.EgressGateway == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range t.EgressGateway.Destinations {
		if c := d.Credential; c != nil && !seen[c.Secret] {
			seen[c.Secret] = true
			out = append(out, c.Secret)
		}
	}
	slices.Sort(out)
	return out
}

// LocalGatewayImage is the gateway image of target local: the one this
// build of Paddock imports into the local node, tagged with the build's
// version, so a platform always runs the gateway of the Paddock that
// renders it.
func LocalGatewayImage() string { return LocalGatewayRepository + ":" + BuildVersion() }

// linkedRevision is the commit `make build` links into paddock
// (-ldflags "-X github.com/paddock-platform/paddock/internal/model.linkedRevision=...").
// A Go toolchain told not to stamp version control information
// (GOFLAGS=-buildvcs=false, as some CI machines set) would otherwise leave
// paddock and its gateway both "dev", and a node would go on running an
// older gateway image under the same tag: the tag is this, and the node
// imports the gateway binary beside paddock under it.
var linkedRevision string

// LinkedRevision is the commit make build linked in; "" for other builds.
func LinkedRevision() string { return linkedRevision }

// BuildVersion names this build of Paddock in an image tag: its commit (12
// hex digits, "-dirty" when built from a modified tree) as make build links
// it in or Go stamps it, or "dev" when the build carries neither (go test,
// go run).
func BuildVersion() string {
	if linkedRevision != "" {
		return linkedRevision
	}
	if rev := RevisionOf(debug.ReadBuildInfo()); rev != "" {
		return rev
	}
	return "dev"
}

// RevisionOf is the commit a build's information carries (12 hex digits,
// "-dirty" when built from a modified tree), "" when it carries none: one
// reading for the gateway image's tag and `paddock version`.
func RevisionOf(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return ""
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	rev = strings.ToLower(rev[:min(12, len(rev))])
	if dirty {
		rev += "-dirty"
	}
	return rev
}
