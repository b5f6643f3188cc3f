package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is the gateway's configuration file, the object the spec layer
// renders for each tenant (JSON, unknown fields refused).
type Config struct {
	// Listen is the address the gateway serves plain HTTP on, e.g. ":8080".
	Listen string `json:"listen"`
	// Destinations are the only hosts a sandbox may reach.
	Destinations []Destination `json:"destinations"`
	// Budgets apply to each sandbox separately.
	Budgets Budgets `json:"budgets"`
	// Identify says how a caller is known.
	Identify Identify `json:"identify"`
	// CABundleFile, when set, is a PEM file of the CAs that destination
	// certificates are verified against instead of the system roots.
	CABundleFile string `json:"caBundleFile,omitempty"`
	// Cluster lists the cluster's own addresses, never dialed.
	Cluster ClusterRanges `json:"cluster"`
	// AllowCIDRs reopens ranges that are refused by default (loopback,
	// private, CGNAT, reserved) for tests and local targets. Empty in
	// production. It never reopens link-local, multicast, unspecified or
	// the cluster's ranges.
	AllowCIDRs []string `json:"allowCIDRs,omitempty"`
	// Timeouts bound the server and the upstream transport.
	Timeouts Timeouts `json:"timeouts"`
}

// Destination is one host a sandbox may call through the gateway.
type Destination struct {
	// Host is the destination's DNS name (never an IP literal), matched
	// case-insensitively against the request's Host.
	Host string `json:"host"`
	// Port is the destination's TLS port, 443 when zero.
	Port int `json:"port,omitempty"`
	// Credential, when set, is injected into every request to Host.
	Credential *Credential `json:"credential,omitempty"`
	// StripHeaders are further request headers to remove (beyond the
	// credential headers always removed), e.g. a vendor's own key header.
	StripHeaders []string `json:"stripHeaders,omitempty"`
}

// Credential is how the destination's key is presented: either a header
// whose value is Format with {{key}} replaced by the key file's content, or
// HTTP basic auth from a user and a password file.
type Credential struct {
	// Header is the header name, e.g. "Authorization" or "x-api-key".
	Header string `json:"header,omitempty"`
	// Format is the header value; {{key}} stands for the key, e.g.
	// "Bearer {{key}}". Defaults to "{{key}}".
	Format string `json:"format,omitempty"`
	// KeyFile is the file holding the key (a mounted Secret). Surrounding
	// white space, such as a trailing newline, is trimmed.
	KeyFile string `json:"keyFile,omitempty"`
	// BasicAuth presents the credential as Authorization: Basic.
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`
}

// BasicAuth names the files holding a user and a password.
type BasicAuth struct {
	UserFile     string `json:"userFile"`
	PasswordFile string `json:"passwordFile"`
}

// Budgets are each sandbox's limits. A zero field takes its default.
type Budgets struct {
	RequestsPerMinute  int   `json:"requestsPerMinute,omitempty"`
	BytesPerMinute     int64 `json:"bytesPerMinute,omitempty"`
	ConcurrentRequests int   `json:"concurrentRequests,omitempty"`
	Connections        int   `json:"connections,omitempty"`
	MaxRequestBytes    int64 `json:"maxRequestBytes,omitempty"`
	MaxResponseBytes   int64 `json:"maxResponseBytes,omitempty"`
}

// Identify modes.
const (
	// IdentifyPodAddress knows the caller by its pod address.
	IdentifyPodAddress = "podAddress"
	// IdentifyTokenReview knows the caller by the projected service-account
	// token it sends as Proxy-Authorization: Bearer, reviewed for Audience.
	IdentifyTokenReview = "tokenReview"
)

// Identify says how the gateway knows who is calling.
type Identify struct {
	// Mode is podAddress (the default) or tokenReview.
	Mode string `json:"mode,omitempty"`
	// Audience is the token audience required in tokenReview mode.
	Audience string `json:"audience,omitempty"`
}

// ClusterRanges are the cluster's own addresses: always refused.
type ClusterRanges struct {
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	ServiceCIDRs  []string `json:"serviceCIDRs,omitempty"`
	NodeAddresses []string `json:"nodeAddresses,omitempty"` // addresses or CIDRs
}

// Timeouts bound the gateway's waits. A zero field takes its default.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers from the sandbox.
	ReadHeader Duration `json:"readHeader,omitempty"`
	// Idle bounds a sandbox's idle keep-alive connection.
	Idle Duration `json:"idle,omitempty"`
	// Dial bounds connecting (and the TLS handshake) to a destination.
	Dial Duration `json:"dial,omitempty"`
	// ResponseHeader bounds the wait for a destination's response headers
	// (an LLM API may think for minutes before answering).
	ResponseHeader Duration `json:"responseHeader,omitempty"`
	// Request bounds a whole request, body streaming included.
	Request Duration `json:"request,omitempty"`
}

// Defaults.
const (
	DefaultPort               = 443
	DefaultRequestsPerMinute  = 600
	DefaultBytesPerMinute     = 256 << 20
	DefaultConcurrentRequests = 16
	DefaultConnections        = 32
	DefaultMaxRequestBytes    = 16 << 20
	DefaultMaxResponseBytes   = 64 << 20
	// MaxHeaderBytes bounds a request's header block.
	MaxHeaderBytes = 64 << 10
)

var defaultTimeouts = Timeouts{
	ReadHeader:     Duration(10 * time.Second),
	Idle:           Duration(90 * time.Second),
	Dial:           Duration(10 * time.Second),
	ResponseHeader: Duration(5 * time.Minute),
	Request:        Duration(15 * time.Minute),
}

// Duration is a time.Duration written in JSON as Go duration text ("90s").
type Duration time.Duration

// UnmarshalJSON reads "90s"-style text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is text such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes "90s"-style text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// LoadConfig reads, decodes and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := DecodeConfig(io.LimitReader(f, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// DecodeConfig decodes one JSON configuration, refusing unknown fields and
// trailing data, applies the defaults and validates it.
func DecodeConfig(r io.Reader) (*Config, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding the gateway configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding the gateway configuration: data after the JSON object")
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// clone copies c deeply enough that ApplyDefaults on the copy leaves c as
// it was.
func (c *Config) clone() *Config {
	cp := *c
	cp.Destinations = slices.Clone(c.Destinations)
	for i, d := range cp.Destinations {
		if d.Credential != nil {
			cr := *d.Credential
			if cr.BasicAuth != nil {
				ba := *cr.BasicAuth
				cr.BasicAuth = &ba
			}
			cp.Destinations[i].Credential = &cr
		}
	}
	return &cp
}

// ApplyDefaults fills the zero fields that have defaults.
func (c *Config) ApplyDefaults() {
	for i := range c.Destinations {
		d := &c.Destinations[i]
		d.Host = normalizeHost(d.Host)
		if d.Port == 0 {
			d.Port = DefaultPort
		}
		if d.Credential != nil && d.Credential.BasicAuth == nil && d.Credential.Format == "" {
			d.Credential.Format = "{{key}}"
		}
	}
	b := &c.Budgets
	setDefault(&b.RequestsPerMinute, DefaultRequestsPerMinute)
	setDefault(&b.BytesPerMinute, DefaultBytesPerMinute)
	setDefault(&b.ConcurrentRequests, DefaultConcurrentRequests)
	setDefault(&b.Connections, DefaultConnections)
	setDefault(&b.MaxRequestBytes, DefaultMaxRequestBytes)
	setDefault(&b.MaxResponseBytes, DefaultMaxResponseBytes)
	if c.Identify.Mode == "" {
		c.Identify.Mode = IdentifyPodAddress
	}
	t := &c.Timeouts
	setDefault(&t.ReadHeader, defaultTimeouts.ReadHeader)
	setDefault(&t.Idle, defaultTimeouts.Idle)
	setDefault(&t.Dial, defaultTimeouts.Dial)
	setDefault(&t.ResponseHeader, defaultTimeouts.ResponseHeader)
	setDefault(&t.Request, defaultTimeouts.Request)
}

func setDefault[T int | int64 | Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Listen == "" {
		bad("listen: required (e.g. \":8080\")")
	}
	if len(c.Destinations) == 0 {
		bad("destinations: at least one is required")
	}
	seen := map[string]int{}
	for i, d := range c.Destinations {
		where := fmt.Sprintf("destinations[%d]", i)
		if err := validHostName(d.Host); err != nil {
			bad("%s.host: %v", where, err)
		}
		if j, dup := seen[d.Host]; dup && d.Host != "" {
			bad("%s.host: %q is already destinations[%d]", where, d.Host, j)
		}
		seen[d.Host] = i
		if d.Port < 1 || d.Port > 65535 {
			bad("%s.port: %d is not a TCP port", where, d.Port)
		}
		for _, h := range d.StripHeaders {
			if !validHeaderName(h) {
				bad("%s.stripHeaders: %q is not a header name", where, h)
			}
		}
		if d.Credential != nil {
			for _, err := range d.Credential.validate() {
				bad("%s.credential: %v", where, err)
			}
		}
	}
	b := c.Budgets
	for name, v := range map[string]int64{
		"requestsPerMinute": int64(b.RequestsPerMinute), "bytesPerMinute": b.BytesPerMinute,
		"concurrentRequests": int64(b.ConcurrentRequests), "connections": int64(b.Connections),
		"maxRequestBytes": b.MaxRequestBytes, "maxResponseBytes": b.MaxResponseBytes,
	} {
		if v < 0 {
			bad("budgets.%s: %d is negative (zero takes the default)", name, v)
		}
	}
	switch c.Identify.Mode {
	case IdentifyPodAddress:
		if c.Identify.Audience != "" {
			bad("identify.audience: only for mode %q", IdentifyTokenReview)
		}
	case IdentifyTokenReview:
		if c.Identify.Audience == "" {
			bad("identify.audience: required in mode %q", IdentifyTokenReview)
		}
	default:
		bad("identify.mode: %q is not %q or %q", c.Identify.Mode, IdentifyPodAddress, IdentifyTokenReview)
	}
	for _, list := range []struct {
		name string
		v    []string
		bare bool
	}{
		{"cluster.podCIDRs", c.Cluster.PodCIDRs, false},
		{"cluster.serviceCIDRs", c.Cluster.ServiceCIDRs, false},
		{"cluster.nodeAddresses", c.Cluster.NodeAddresses, true},
		{"allowCIDRs", c.AllowCIDRs, false},
	} {
		for _, s := range list.v {
			p, err := parsePrefix(s, list.bare)
			if err != nil {
				bad("%s: %v", list.name, err)
			} else if list.name == "allowCIDRs" && p.Bits() == 0 {
				bad("%s: %q reopens every address; name the test or local range only", list.name, s)
			}
		}
	}
	t := c.Timeouts
	for name, v := range map[string]Duration{
		"readHeader": t.ReadHeader, "idle": t.Idle, "dial": t.Dial,
		"responseHeader": t.ResponseHeader, "request": t.Request,
	} {
		if v < 0 {
			bad("timeouts.%s: %s is negative", name, time.Duration(v))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sortErrors(errs)
	return fmt.Errorf("invalid gateway configuration:\n  %w", joinIndented(errs))
}

func (cr *Credential) validate() []error {
	var errs []error
	if cr.BasicAuth != nil {
		if cr.Header != "" || cr.Format != "" || cr.KeyFile != "" {
			errs = append(errs, errors.New("basicAuth stands alone: no header, format or keyFile beside it"))
		}
		if cr.BasicAuth.UserFile == "" || cr.BasicAuth.PasswordFile == "" {
			errs = append(errs, errors.New("basicAuth: userFile and passwordFile are required"))
		}
		return errs
	}
	if !validHeaderName(cr.Header) {
		errs = append(errs, fmt.Errorf("header: %q is not a header name", cr.Header))
	}
	if strings.Count(cr.Format, keyPlaceholder) != 1 {
		errs = append(errs, fmt.Errorf("format: %q must hold %s once", cr.Format, keyPlaceholder))
	} else if !validHeaderValue(strings.Replace(cr.Format, keyPlaceholder, "k", 1)) {
		errs = append(errs, errors.New("format: holds a control character"))
	}
	if cr.KeyFile == "" {
		errs = append(errs, errors.New("keyFile: required"))
	}
	return errs
}

const keyPlaceholder = "{{key}}"

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// validHostName accepts a DNS name of letters, digits and hyphens; never an
// IP literal, a port or a wildcard.
func validHostName(h string) error {
	if h == "" {
		return errors.New("required")
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return fmt.Errorf("%q is an IP literal: name the destination by its DNS name", h)
	}
	if len(h) > 253 {
		return fmt.Errorf("%q is longer than 253 characters", h)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("%q is not a DNS name", h)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("%q is not a DNS name (no ports, wildcards or other characters)", h)
			}
		}
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return fmt.Errorf("%q ends in a numeric label: not a DNS name", h)
	}
	return nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue refuses control characters other than tab, and so CR
// and LF, which would split the header.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// parsePrefix reads a CIDR, or with bare an address alone (a /32 or /128).
func parsePrefix(s string, bare bool) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		if p != p.Masked() {
			return netip.Prefix{}, fmt.Errorf("%q has host bits set (did you mean %s?)", s, p.Masked())
		}
		return netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)), nil
	}
	if bare {
		if a, err := netip.ParseAddr(s); err == nil {
			a = a.Unmap()
			return netip.PrefixFrom(a, a.BitLen()), nil
		}
		return netip.Prefix{}, fmt.Errorf("%q is not an address or CIDR", s)
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR", s)
}

func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(p.Bits()-96, 0)
	}
	return p.Bits()
}

// sortErrors orders the errors by text (some were found walking maps).
func sortErrors(errs []error) {
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

type indentedErrors []error

func (e indentedErrors) Error() string {
	var b bytes.Buffer
	for i, err := range e {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e indentedErrors) Unwrap() []error { return e }

func joinIndented(errs []error) error { return indentedErrors(errs) }
