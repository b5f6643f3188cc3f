package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Options are the gateway's collaborators; every field may be left zero.
type Options struct {
	// Resolver resolves destinations; net.DefaultResolver when nil.
	Resolver *net.Resolver
	// Identifier maps pod addresses to sandboxes (podAddress mode);
	// AddressIdentifier when nil.
	Identifier Identifier
	// TokenReviewer reviews tokens (tokenReview mode); required there.
	TokenReviewer TokenReviewer
	// Logger receives the audit lines; a JSON logger on stderr when nil.
	Logger *slog.Logger
	// Now is the clock the budgets run on; time.Now when nil.
	Now func() time.Time
}

// Gateway is an http.Handler that forwards each sandbox request to its
// destination. See the package documentation for what it guarantees.
type Gateway struct {
	cfg        Config
	dests      map[string]*destination
	identifier Identifier
	reviewer   TokenReviewer
	log        *slog.Logger
	now        func() time.Time
	budgets    *budgets
	dialer     *guardedDialer
	transport  *http.Transport
	proxy      *httputil.ReverseProxy
	creds      atomic.Pointer[credentialSet]
}

// destination is a configured destination, ready to serve.
type destination struct {
	host     string
	port     int
	hostport string   // the upstream URL's host: the name, with the port unless 443
	strip    []string // request headers removed
}

// Request headers that carry a caller's own credential, always removed.
var strippedRequestHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie",
	"X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Auth-Token",
}

// New builds a gateway from a configuration (LoadConfig's, or one built in
// code: New applies the defaults to its own copy and validates it), reading
// the credential files and the CA bundle.
func New(conf *Config, o Options) (*Gateway, error) {
	c := conf.clone()
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{
		cfg:        *c,
		dests:      map[string]*destination{},
		identifier: o.Identifier,
		reviewer:   o.TokenReviewer,
		log:        o.Logger,
		now:        o.Now,
	}
	if g.identifier == nil {
		g.identifier = AddressIdentifier{}
	}
	if c.Identify.Mode == IdentifyTokenReview && g.reviewer == nil {
		return nil, errors.New("identify.mode tokenReview needs a TokenReviewer (a cluster client)")
	}
	if g.log == nil {
		g.log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if g.now == nil {
		g.now = time.Now
	}
	resolver := o.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	for _, d := range c.Destinations {
		dst := &destination{host: d.Host, port: d.Port, hostport: d.Host}
		if d.Port != DefaultPort {
			dst.hostport = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		}
		dst.strip = append(dst.strip, strippedRequestHeaders...)
		if d.Credential != nil && d.Credential.BasicAuth == nil {
			dst.strip = append(dst.strip, d.Credential.Header)
		}
		dst.strip = append(dst.strip, d.StripHeaders...)
		g.dests[d.Host] = dst
	}
	if err := g.ReloadCredentials(); err != nil {
		return nil, err
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CABundleFile != "" {
		pem, err := os.ReadFile(c.CABundleFile)
		if err != nil {
			return nil, fmt.Errorf("caBundleFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caBundleFile: %s holds no PEM certificate", c.CABundleFile)
		}
		tlsConf.RootCAs = pool
	}
	policy, err := newAddressPolicy(c)
	if err != nil {
		return nil, err
	}
	g.budgets = newBudgets(c.Budgets, g.now)
	g.dialer = newGuardedDialer(resolver, policy, time.Duration(c.Timeouts.Dial))
	g.transport = &http.Transport{
		Proxy:                  nil, // never the gateway's own environment's proxy
		DialContext:            g.dialer.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    time.Duration(c.Timeouts.Dial),
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    32,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  time.Duration(c.Timeouts.ResponseHeader),
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxHeaderBytes,
	}
	// The proxy calls the transport's RoundTrip itself: there is no
	// http.Client, and so no redirect is ever followed.
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      g.transport,
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		ErrorLog:       g.ErrorLog(),
		BufferPool:     bufPool,
	}
	return g, nil
}

// ReloadCredentials reads the credential files again (a rotated Secret);
// on an error the credentials in use stay.
func (g *Gateway) ReloadCredentials() error {
	cs, err := loadCredentials(&g.cfg)
	if err != nil {
		return err
	}
	g.creds.Store(cs)
	return nil
}

// Close drops the idle upstream connections.
func (g *Gateway) Close() { g.transport.CloseIdleConnections() }

// Server is the http.Server to serve the gateway with: bounded headers,
// header read and idle timeouts. No write timeout: a model's answer may
// stream for minutes; Timeouts.Request bounds each request instead.
func (g *Gateway) Server() *http.Server {
	return &http.Server{
		Addr:              g.cfg.Listen,
		Handler:           g,
		ReadHeaderTimeout: time.Duration(g.cfg.Timeouts.ReadHeader),
		IdleTimeout:       time.Duration(g.cfg.Timeouts.Idle),
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          g.ErrorLog(),
	}
}

// ErrorLog is a log.Logger for the net/http machinery's own messages: they
// go to the structured log, with any credential masked.
func (g *Gateway) ErrorLog() *log.Logger {
	return log.New(maskedLogWriter{g}, "", 0)
}

type maskedLogWriter struct{ g *Gateway }

func (w maskedLogWriter) Write(p []byte) (int, error) {
	w.g.log.Warn("http", "detail", w.g.creds.Load().mask(strings.TrimSpace(string(p))))
	return len(p), nil
}

// ctxKey carries a request's state from ServeHTTP to the proxy's hooks.
type ctxKey struct{}

// requestState is what the proxy's hooks need to know of a request.
type requestState struct {
	dest   *destination
	budget *callerBudget
	rec    *auditRecord
	creds  *credentialSet
}

func stateOf(ctx context.Context) *requestState {
	s, _ := ctx.Value(ctxKey{}).(*requestState)
	return s
}

// ServeHTTP judges and forwards one sandbox request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := g.now()
	creds := g.creds.Load()
	rec := &auditRecord{method: r.Method, path: r.URL.Path}
	if a, err := callerAddr(r); err == nil {
		rec.addr = a
	}
	rw := &responseRecorder{ResponseWriter: w, creds: creds}
	defer func() {
		if p := recover(); p != nil {
			rec.cut = rec.status != statusClientClosed
			g.audit(rec, rw, start)
			panic(p) // http.ErrAbortHandler: the server drops the connection
		}
		g.audit(rec, rw, start)
	}()

	if r.Method == http.MethodConnect {
		g.refuse(rw, rec, http.StatusMethodNotAllowed, "CONNECT is refused: send plain HTTP, the gateway speaks TLS to the destination")
		return
	}
	if r.Header.Get("Upgrade") != "" || headerHasToken(r.Header, "Connection", "upgrade") {
		g.refuse(rw, rec, http.StatusForbidden, "protocol upgrades are refused: the gateway must see each request")
		return
	}
	caller, err := g.identify(r)
	if err != nil {
		if errors.Is(err, ErrUnknownCaller) {
			g.refuse(rw, rec, http.StatusForbidden, "unknown caller: not a sandbox of this gateway")
		} else {
			rec.err = creds.mask(err.Error())
			g.refuse(rw, rec, http.StatusServiceUnavailable, "caller identification unavailable")
		}
		return
	}
	rec.caller = caller
	budget, release, no := g.budgets.admit(caller.key())
	if no != nil {
		rw.Header().Set("Retry-After", strconv.Itoa(no.retryAfter))
		g.refuse(rw, rec, http.StatusTooManyRequests, no.reason)
		return
	}
	defer release()
	rw.budget = budget

	dest, status, reason := g.destinationOf(r)
	if dest == nil {
		g.refuse(rw, rec, status, reason)
		return
	}
	rec.destination = dest.host
	max := g.cfg.Budgets.MaxRequestBytes
	if r.ContentLength > max {
		g.refuse(rw, rec, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the %d-byte limit", max))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: http.MaxBytesReader(w, r.Body, max), n: &rec.bytesIn, budget: budget}
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(g.cfg.Timeouts.Request))
	defer cancel()
	ctx = context.WithValue(ctx, ctxKey{}, &requestState{dest: dest, budget: budget, rec: rec, creds: creds})
	g.proxy.ServeHTTP(rw, r.WithContext(ctx))
	creds.maskHeader(rw.Header()) // trailers are set after the body
}

// destinationOf finds the destination the request names by its Host (or
// absolute-form URI), or says why there is none.
func (g *Gateway) destinationOf(r *http.Request) (*destination, int, string) {
	if r.URL.IsAbs() && r.URL.Scheme != "http" {
		return nil, http.StatusForbidden, "only http:// requests: the gateway speaks TLS to the destination"
	}
	host, port := r.Host, ""
	if h, p, err := net.SplitHostPort(r.Host); err == nil {
		host, port = h, p
	}
	host = normalizeHost(host)
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return nil, http.StatusForbidden, "IP literal refused: name a destination by its host name"
	}
	d := g.dests[host]
	if d == nil || (port != "" && port != "80" && port != strconv.Itoa(d.port)) {
		return nil, http.StatusForbidden, fmt.Sprintf("host %q is not a destination of this gateway", truncate(r.Host, 100))
	}
	return d, 0, ""
}

// rewrite makes the upstream request: https to the destination, the
// sandbox's credentials stripped and the destination's injected. Rewrite
// has already removed Forwarded and X-Forwarded-*; none are added, so the
// pod address stays inside the cluster.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	st := stateOf(pr.In.Context())
	out := pr.Out
	out.URL.Scheme = "https"
	out.URL.Host = st.dest.hostport
	out.URL.User = nil // the Transport would turn userinfo into basic auth
	out.Host = ""
	for _, h := range st.dest.strip {
		out.Header.Del(h)
	}
	// The Transport asks for gzip itself and decompresses, so the masking
	// of echoed keys sees the bytes in the clear.
	out.Header.Del("Accept-Encoding")
	if inj, ok := st.creds.byHost[st.dest.host]; ok {
		out.Header.Set(inj.name, inj.value)
	}
}

var errResponseTooLarge = errors.New("response body over the size limit")

// modifyResponse bounds, masks and charges the response body.
func (g *Gateway) modifyResponse(res *http.Response) error {
	st := stateOf(res.Request.Context())
	st.creds.maskHeader(res.Header)
	res.Header.Del(RefusalHeader) // only the gateway's own answers carry it
	max := g.cfg.Budgets.MaxResponseBytes
	if res.ContentLength > max {
		return errResponseTooLarge
	}
	body := &limitedBody{rc: res.Body, left: max}
	res.Body = maskedBody{newMaskingReader(body, st.creds), body}
	return nil
}

// proxyError answers a request the proxy could not complete, with a short
// fixed reason; the masked error goes to the audit line only.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	rec := st.rec
	rec.err = st.creds.mask(err.Error())
	var maxErr *http.MaxBytesError
	var certErr *tls.CertificateVerificationError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, errAddressRefused):
		g.refuse(w, rec, http.StatusForbidden, "destination address refused: it resolves to an address the gateway never dials")
	case errors.As(err, &maxErr):
		g.refuse(w, rec, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the %d-byte limit", g.cfg.Budgets.MaxRequestBytes))
	case errors.Is(err, errResponseTooLarge):
		g.refuse(w, rec, http.StatusBadGateway, "response body over the size limit")
	case errors.As(err, &certErr):
		g.refuse(w, rec, http.StatusBadGateway, "destination certificate not trusted")
	case errors.As(err, &dnsErr):
		g.refuse(w, rec, http.StatusBadGateway, "destination name did not resolve")
	case errors.Is(err, context.DeadlineExceeded):
		g.refuse(w, rec, http.StatusGatewayTimeout, "destination timed out")
	case errors.Is(err, context.Canceled):
		// The sandbox closed its side (a client that half-closes after
		// its request, as busybox nc does, counts): no answer at all
		// rather than an empty 200 it might read as the destination's.
		rec.status = statusClientClosed
		panic(http.ErrAbortHandler)
	default:
		g.refuse(w, rec, http.StatusBadGateway, "destination unreachable")
	}
}

// statusClientClosed is the audit status of a request whose sandbox went
// away before the answer (nginx's 499): nothing was sent back.
const statusClientClosed = 499

// RefusalHeader marks every answer the gateway makes itself rather than
// relays, with its one-line reason: a destination's own 403 or 502 never
// carries it, so a client (and verify) can tell the two apart.
const RefusalHeader = "X-Paddock-Gateway-Refusal"

// refuse answers with status and a one-line reason.
func (g *Gateway) refuse(w http.ResponseWriter, rec *auditRecord, status int, reason string) {
	rec.reason = reason
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(RefusalHeader, headerSafe(reason))
	h.Del("Content-Length")
	w.WriteHeader(status)
	io.WriteString(w, "paddock gateway: "+reason+"\n")
}

// headerSafe keeps reason to printable ASCII: it may quote a host the
// sandbox sent.
func headerSafe(reason string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, reason)
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
