package gateway

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// testKey is the destination's key: it must reach the destination and
// nothing else.
const testKey = "sk-test-0123456789abcdef-KEEPOUT"

// sandboxToken is a credential the sandbox sends of its own.
const sandboxToken = "sandbox-own-credential-123"

// --- a CA of the test's own ---

type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pemPath string
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pemPath: p}
}

func (ca *testCA) leaf(t testing.TB, hosts ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: hosts[0]},
		DNSNames:     hosts,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// --- a DNS server in memory ---

// fakeDNS answers the gateway's lookups from a script, over in-memory
// pipes: no packet leaves the process. Each name has a list of answers;
// the nth A (or AAAA) query gets the nth answer, the last one repeating.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   map[string]int // A queries by name
	seen    map[string]int // AAAA queries by name
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{answers: map[string][][]netip.Addr{}, asked: map[string]int{}, seen: map[string]int{}}
}

// set scripts name's answers, one list of addresses per lookup.
func (f *fakeDNS) set(name string, answers ...[]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as [][]netip.Addr
	for _, a := range answers {
		var l []netip.Addr
		for _, s := range a {
			l = append(l, netip.MustParseAddr(s))
		}
		as = append(as, l)
	}
	f.answers[name] = as
	f.asked[name], f.seen[name] = 0, 0
}

// queries is how many A lookups name has had.
func (f *fakeDNS) queries(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[name]
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go f.serve(server)
			return client, nil
		},
	}
}

// serve speaks DNS over TCP framing (a pipe is no PacketConn, so Go's
// resolver frames its messages with a length).
func (f *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		resp, err := f.answer(msg)
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(n[:], uint16(len(resp)))
		if _, err := c.Write(append(n[:], resp...)); err != nil {
			return
		}
	}
}

func (f *fakeDNS) answer(msg []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	f.mu.Lock()
	script, known := f.answers[name]
	var addrs []netip.Addr
	if known {
		count := f.asked
		if q.Type == dnsmessage.TypeAAAA {
			count = f.seen
		}
		addrs = script[min(count[name], len(script)-1)]
		count[name]++
	}
	f.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// --- the destination ---

// upstream is a TLS test server standing for a destination.
type upstream struct {
	srv     *httptest.Server
	port    int
	mu      sync.Mutex
	got     []*http.Request // header, URL and host of each request seen
	handler http.HandlerFunc
}

func newUpstream(t testing.TB, cert tls.Certificate, h http.HandlerFunc, opts ...func(*httptest.Server)) *upstream {
	t.Helper()
	u := &upstream{handler: h}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.got = append(u.got, &http.Request{Method: r.Method, URL: r.URL, Host: r.Host, Header: r.Header.Clone(), Proto: r.Proto})
		u.mu.Unlock()
		if u.handler != nil {
			u.handler(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "hello from upstream\n")
	}))
	u.srv.Config.ErrorLog = quietLog()
	u.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, o := range opts {
		o(u.srv)
	}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	_, port, _ := net.SplitHostPort(u.srv.Listener.Addr().String())
	u.port, _ = strconv.Atoi(port)
	return u
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.got...)
}

// --- the gateway under test ---

// fakeClock is the budgets' clock: it moves only when a test moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeIdentifier knows the sandboxes by address, as a pod informer would.
type fakeIdentifier map[netip.Addr]Caller

func (f fakeIdentifier) Identify(_ context.Context, a netip.Addr) (Caller, error) {
	if c, ok := f[a]; ok {
		return c, nil
	}
	return Caller{}, ErrUnknownCaller
}

// Callers, by the loopback address their client dials from.
var (
	sandboxA = "127.0.0.1"
	sandboxB = "127.0.0.2"
	stranger = "127.0.0.3"
	callers  = fakeIdentifier{
		netip.MustParseAddr(sandboxA): {Namespace: "tenant-a", Pod: "sandbox-a", Sandbox: "sandbox-a", Claim: "claim-a"},
		netip.MustParseAddr(sandboxB): {Namespace: "tenant-a", Pod: "sandbox-b", Sandbox: "sandbox-b", Claim: "claim-b"},
	}
)

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one gateway in front of one destination, api.test, served by a
// TLS server on 127.0.0.1 whose certificate the test's CA signed.
type env struct {
	t        testing.TB
	ca       *testCA
	dns      *fakeDNS
	up       *upstream
	cfg      *Config
	gw       *Gateway
	srv      *httptest.Server
	logs     *syncBuffer
	clock    *fakeClock
	reviewer TokenReviewer
	dials    atomic.Int32 // dials that passed the resolution check
	mu       sync.Mutex
	connects []string // addresses the Control hook let through
}

type envOption func(*Config, *env)

// withoutAllowList leaves the loopback destination refused, as in
// production.
func withoutAllowList(c *Config, _ *env) { c.AllowCIDRs = nil }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, dns: newFakeDNS(), logs: &syncBuffer{}, clock: &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	e.ca = newTestCA(t, "paddock-test-ca")
	e.up = newUpstream(t, e.ca.leaf(t, "api.test", "other-port.test"), nil)
	e.dns.set("api.test", []string{"127.0.0.1"})
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg = &Config{
		Listen: "127.0.0.1:0",
		Destinations: []Destination{{
			Host: "api.test", Port: e.up.port,
			Credential: &Credential{Header: "Authorization", Format: "Bearer {{key}}", KeyFile: keyFile},
		}},
		Budgets:      Budgets{RequestsPerMinute: 1_000_000, BytesPerMinute: 1 << 40, ConcurrentRequests: 1000, Connections: 1000},
		CABundleFile: e.ca.pemPath,
		// The one, visible opt-in: the test's destination is on loopback.
		AllowCIDRs: []string{"127.0.0.0/8"},
	}
	for _, o := range opts {
		o(e.cfg, e)
	}
	e.cfg.ApplyDefaults()
	gw, err := New(e.cfg, Options{
		Resolver:      e.dns.resolver(),
		Identifier:    callers,
		TokenReviewer: e.reviewer,
		Logger:        slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:           e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	gw.dialer.onDial = func(string) { e.dials.Add(1) }
	// A fence behind the policy: whatever a broken policy lets through, the
	// tests connect to loopback only.
	gw.dialer.afterControl = func(network, address string) error {
		e.mu.Lock()
		e.connects = append(e.connects, address)
		e.mu.Unlock()
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("the gateway tried to connect to %s, outside loopback", address)
			return errors.New("test fence: loopback only")
		}
		return nil
	}
	e.srv = httptest.NewUnstartedServer(gw)
	e.srv.Listener = gw.LimitListener(e.srv.Listener)
	s := gw.Server()
	e.srv.Config.ReadHeaderTimeout, e.srv.Config.MaxHeaderBytes, e.srv.Config.ErrorLog = s.ReadHeaderTimeout, s.MaxHeaderBytes, s.ErrorLog
	e.srv.Start()
	t.Cleanup(func() { e.srv.Close(); gw.Close() })
	return e
}

func (e *env) connected() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.connects...)
}

// client is a sandbox at addr calling the gateway directly, naming the
// destination by Host. It never follows redirects.
func (e *env) client(addr string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, e.srv.Listener.Addr().String())
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type response struct {
	status int
	header http.Header
	body   string
	err    error // reading the body
}

// do sends method to http://host/path through the gateway from addr.
func (e *env) do(addr, method, host, path string, body io.Reader, hdr http.Header) response {
	e.t.Helper()
	req, err := http.NewRequest(method, "http://"+host+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := e.client(addr).Do(req)
	if err != nil {
		e.t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	defer res.Body.Close()
	b, rerr := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: string(b), err: rerr}
}

func (e *env) get(addr, host, path string) response {
	e.t.Helper()
	return e.do(addr, http.MethodGet, host, path, nil, nil)
}

// auditLines are the gateway's audit lines so far, decoded.
func (e *env) auditLines() []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// proxyClient is a sandbox at addr using the gateway as its HTTP proxy
// (absolute-form request URIs).
func (e *env) proxyClient(addr string) *http.Client {
	c := e.client(addr)
	u, _ := url.Parse(e.srv.URL)
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(u)
	return c
}
