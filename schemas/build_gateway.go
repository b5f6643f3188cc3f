package schemas

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// Building a tenant's egress_gateway block (issue 38).

// Bounds of the gateway's arguments.
const (
	maxGatewayReplicas = 10
	maxGatewayBudget   = 1 << 40 // a budget past a terabyte is no budget
)

var (
	// gatewayImageDigestRe is an image pinned by content: name@sha256:hex.
	gatewayImageDigestRe = regexp.MustCompile(`@sha256:[a-f0-9]{64}$`)
	// headerNameRe is an HTTP header name (an RFC 9110 token).
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// gatewayKeyPlaceholder stands for the key in a credential's format.
const gatewayKeyPlaceholder = "{{key}}"

// egressGateway builds a tenant's egress_gateway block onto
// model.DefaultEgressGateway; nil when the tenant has none.
func (b *builder) egressGateway(n *node, tenant string) *model.EgressGateway {
	if n == nil {
		return nil
	}
	g := model.DefaultEgressGateway()
	g.Src, g.Attrs = n.src(), n.attrs()
	local := b.p.Target.Kind == model.TargetLocal
	image, st := b.str(n.attr(argImage))
	switch {
	case st == set:
		at := n.attr(argImage).Expr.Range()
		if problem := imageProblem(image); problem != "" {
			b.errorf(at, "Invalid image", "The gateway image %s %s", clipValue(image), problem)
		} else if !local && !gatewayImageDigestRe.MatchString(image) {
			b.errorf(at, "Gateway image not pinned by digest",
				"The gateway image %s names no digest. The gateway holds the tenant's credentials, so on target %q it runs only from an image pinned by content: write \"<repository>@sha256:<64 hex digits>\" as `docker buildx imagetools inspect` or `crane digest` prints it (docs/gcp.md, \"The egress gateway image\").",
				clipValue(image), b.p.Target.Kind)
		}
		g.Image = image
	case st == unset && local:
		g.Image = model.LocalGatewayImage()
	case st == unset && b.p.Target.Kind != "":
		b.errorf(n.DefRange, "Missing required argument",
			"The egress_gateway block of tenant %q needs image on target %q: only target local builds the gateway itself. Build cmd/paddock-gateway, push it and name it by digest, for example: image = \"registry.example.com/paddock-gateway@sha256:<64 hex digits>\" (docs/gcp.md, \"The egress gateway image\").",
			tenant, b.p.Target.Kind)
	}
	if v, st := b.integer(n.attr(argReplicas), 1, maxGatewayReplicas); st == set {
		g.Replicas = int32(v)
	}
	if pemText, st := b.str(n.attr(argCaBundle)); st == set {
		if problem := caBundleProblem(pemText); problem != "" {
			b.errorf(n.attr(argCaBundle).Expr.Range(), "Invalid ca_bundle", "ca_bundle %s", problem)
		}
		g.CABundle = pemText
	}
	if cidrs, st := b.strList(n.attr(argAllowCidrs)); st == set {
		attr := n.attr(argAllowCidrs)
		at := attr.Expr.Range()
		if !local {
			b.errorf(at, "allow_cidrs is for target local only",
				"allow_cidrs reopens private ranges to the gateway, for test servers on the local cluster; on target %q the gateway reaches public addresses only. Remove allow_cidrs.", b.p.Target.Kind)
		}
		for _, c := range cidrs {
			if b.gatewayAllowCIDR(attr, c) {
				g.AllowCIDRs = append(g.AllowCIDRs, c)
			}
		}
	}
	for _, dn := range n.all(blockDestination) {
		g.Destinations = append(g.Destinations, b.gatewayDestination(dn))
	}
	if len(g.Destinations) == 0 {
		b.errorf(n.DefRange, "No destinations",
			"The egress_gateway block of tenant %q lists no destination, so it would refuse every request. Add the hosts its sandboxes may call, for example: destination \"api.anthropic.com\" {}",
			tenant)
	}
	if bn := n.one(blockBudgets); bn != nil {
		g.Budgets = b.gatewayBudgets(bn, g.Budgets)
	}
	return &g
}

// gatewayAllowCIDR checks one allow_cidrs range: a CIDR, never reopening
// link-local (the metadata server) or every address.
func (b *builder) gatewayAllowCIDR(attr *hcl.Attribute, c string) bool {
	if !b.cidr(attr, c) {
		return false
	}
	at := attr.Expr.Range()
	p, err := model.ParseCIDR(c)
	if err != nil {
		return false
	}
	if p != p.Masked() {
		b.errorf(at, "Invalid CIDR", "%q has host bits set: write %s.", c, p.Masked())
		return false
	}
	for _, never := range []string{"169.254.0.0/16", "fe80::/10"} {
		if p.Overlaps(netip.MustParsePrefix(never)) {
			b.errorf(at, "Link-local range in allow_cidrs",
				"%q overlaps link-local %s, where the metadata server answers: the gateway never reaches it. List the test server's range only.", c, never)
			return false
		}
	}
	if p.Bits() == 0 {
		b.errorf(at, "Every address in allow_cidrs", "%q reopens every address. List the test server's range only, such as \"10.215.0.0/24\".", c)
		return false
	}
	return true
}

// caBundleProblem says why s is not a bundle of PEM certificates.
func caBundleProblem(s string) string {
	rest := []byte(s)
	n := 0
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return fmt.Sprintf("holds a PEM block of type %q; only CERTIFICATE blocks belong in a CA bundle (never a key).", clipValue(blk.Type))
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Sprintf("holds a certificate that does not parse (%v).", err)
		}
		n++
	}
	switch {
	case n == 0:
		return "holds no PEM certificate. Write the CA certificates as PEM text (a heredoc, or a variable)."
	case strings.TrimSpace(string(rest)) != "":
		return "holds text after its last certificate; write PEM certificates only."
	}
	return ""
}

// gatewayDestination builds one destination block: its host (the label),
// port and credential.
func (b *builder) gatewayDestination(dn *node) model.GatewayDestination {
	d := model.GatewayDestination{Host: dn.Label, Port: model.DefaultGatewayPort, Src: dn.src(), Attrs: dn.attrs()}
	if problem := gatewayHostProblem(dn.Label); problem != "" {
		b.errorf(dn.LabelRange, "Invalid destination host", "%q %s", clipValue(dn.Label), problem)
	}
	if v, st := b.integer(dn.attr(argPort), 1, 65535); st == set {
		d.Port = int32(v)
	}
	if cn := dn.one(blockCredential); cn != nil {
		d.Credential = b.gatewayCredential(cn)
	}
	return d
}

// gatewayHostProblem says why h is not a destination host: a lower-case DNS
// name with at least two labels, never an IP literal, wildcard, port or URL.
func gatewayHostProblem(h string) string {
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return "is an IP address. Name the destination by its DNS name: the gateway resolves it itself and checks every address it connects to."
	}
	switch {
	case strings.Contains(h, "*"):
		return "is a wildcard. List each host the sandboxes call, such as \"api.example.com\": a wildcard would let an agent reach any name under it."
	case strings.Contains(h, "://") || strings.ContainsAny(h, ":/"):
		return "is not a host name: write the name alone, without scheme, port or path, such as \"api.example.com\" (the port is the block's port argument)."
	case !fqdnRe.MatchString(h):
		return "is not a host name such as \"api.example.com\" (lower case letters, digits, hyphens and dots)."
	}
	return ""
}

// gatewayCredential builds a credential block onto
// model.DefaultGatewayCredential.
func (b *builder) gatewayCredential(cn *node) *model.GatewayCredential {
	c := model.DefaultGatewayCredential("")
	c.Src, c.Attrs = cn.src(), cn.attrs()
	secret, st := b.str(cn.attr(argSecret))
	if b.required(st, cn.attr(argSecret), cn.blockMeta, argSecret, "the Secret holding the key", `secret = "anthropic-key"`) == set {
		b.checkLabel(cn.attr(argSecret), secret, "Secret name")
		c.Secret = secret
	}
	if key, st := b.str(cn.attr(argKey)); st == set {
		if !secretKeyRe.MatchString(key) {
			b.errorf(cn.attr(argKey).Expr.Range(), "Invalid Secret key",
				"%q is not a key of a Secret: letters, digits, '-', '_' and '.' only, such as \"key\".", clipValue(key))
		}
		c.Key = key
	}
	header, hst := b.str(cn.attr(argHeader))
	if hst == set {
		if !headerNameRe.MatchString(header) {
			b.errorf(cn.attr(argHeader).Expr.Range(), "Invalid header",
				"%q is not an HTTP header name. Write one such as \"x-api-key\" or \"Authorization\".", clipValue(header))
		}
		c.Header = header
		if !strings.EqualFold(header, model.DefaultGatewayCredentialHeader) {
			c.Format = model.DefaultGatewayFormat
		}
	}
	if format, st := b.str(cn.attr(argFormat)); st == set {
		at := cn.attr(argFormat).Expr.Range()
		switch {
		case strings.Count(format, gatewayKeyPlaceholder) != 1:
			b.errorf(at, "Invalid format",
				"%q must hold %s exactly once, where the key goes, such as \"Bearer %s\".", clipValue(format), gatewayKeyPlaceholder, gatewayKeyPlaceholder)
		case strings.ContainsFunc(format, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			b.errorf(at, "Invalid format", "The format holds a control character, which would split the header.")
		}
		c.Format = format
	}
	return &c
}

// gatewayBudgets builds a budgets block onto the defaults bg: every budget
// positive.
func (b *builder) gatewayBudgets(n *node, bg model.GatewayBudgets) model.GatewayBudgets {
	bg.Src, bg.Attrs = n.src(), n.attrs()
	for _, f := range []struct {
		name string
		dst  *int
	}{{argRequestsPerMinute, &bg.RequestsPerMinute}, {argConcurrentRequests, &bg.ConcurrentRequests}, {argConnections, &bg.Connections}} {
		if v, st := b.integer(n.attr(f.name), 1, maxCount); st == set {
			*f.dst = int(v)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{argBytesPerMinute, &bg.BytesPerMinute}, {argMaxRequestSize, &bg.MaxRequestBytes}, {argMaxResponseSize, &bg.MaxResponseBytes}} {
		s, st := b.str(n.attr(f.name))
		if st != set {
			continue
		}
		at := n.attr(f.name).Expr.Range()
		q, ok := b.quantity(at, f.name, s)
		if !ok {
			continue
		}
		v := q.Value()
		if q.Sign() <= 0 || v > maxGatewayBudget {
			b.errorf(at, "Invalid budget", "%s %q must be more than 0 and at most 1Ti, such as \"64Mi\".", f.name, s)
			continue
		}
		*f.dst = v
	}
	return bg
}
