package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestListedDestinationGetsInjectedCredential(t *testing.T) {
	e := newEnv(t)
	hdr := http.Header{
		"Authorization":   {"Bearer " + sandboxToken},
		"Cookie":          {"session=" + sandboxToken},
		"X-Api-Key":       {sandboxToken},
		"X-Forwarded-For": {"203.0.113.9"},
		"Forwarded":       {"for=203.0.113.9"},
		"X-Custom":        {"kept"},
	}
	res := e.do(sandboxA, http.MethodGet, "api.test", "/v1/models?limit=2", nil, hdr)
	if res.status != http.StatusOK || res.body != "hello from upstream\n" {
		t.Fatalf("got %d %q, want 200 from upstream", res.status, res.body)
	}
	got := e.up.requests()
	if len(got) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(got))
	}
	r := got[0]
	if a := r.Header.Values("Authorization"); len(a) != 1 || a[0] != "Bearer "+testKey {
		t.Errorf("upstream Authorization = %q, want only the injected key", a)
	}
	for _, h := range []string{"Cookie", "X-Api-Key", "X-Forwarded-For", "Forwarded", "X-Forwarded-Host"} {
		if v := r.Header.Values(h); len(v) != 0 {
			t.Errorf("upstream got %s: %q; the gateway must not pass it", h, v)
		}
	}
	if r.Header.Get("X-Custom") != "kept" {
		t.Errorf("an ordinary header was lost: %v", r.Header)
	}
	if r.Host != "api.test:"+strconv.Itoa(e.up.port) || r.URL.Path != "/v1/models" || r.URL.RawQuery != "limit=2" {
		t.Errorf("upstream got Host %q path %q query %q", r.Host, r.URL.Path, r.URL.RawQuery)
	}

	// The gateway used as an HTTP proxy: an absolute-form request URI.
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/v1/proxy", nil)
	req.SetBasicAuth("sandbox", sandboxToken)
	pres, err := e.proxyClient(sandboxB).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pres.Body.Close()
	if pres.StatusCode != http.StatusOK {
		t.Fatalf("proxy-mode request: %d", pres.StatusCode)
	}
	got = e.up.requests()
	if len(got) != 2 || got[1].URL.Path != "/v1/proxy" || got[1].Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("proxy-mode request reached upstream as %+v", got[len(got)-1])
	}
}

func TestHTTP2Destination(t *testing.T) {
	var h2 *upstream
	e := newEnv(t, func(c *Config, e *env) {
		h2 = newUpstream(t, e.ca.leaf(t, "api.test"), nil, func(s *httptest.Server) { s.EnableHTTP2 = true })
		c.Destinations[0].Port = h2.port
	})
	res := e.do(sandboxA, http.MethodGet, "api.test", "/v1/h2", nil, http.Header{"Authorization": {"Bearer " + sandboxToken}})
	if res.status != http.StatusOK {
		t.Fatalf("HTTP/2 destination: %d %q", res.status, res.body)
	}
	got := h2.requests()
	if len(got) != 1 || got[0].Proto != "HTTP/2.0" || got[0].Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("upstream saw %+v, want one HTTP/2 request with the injected key", got)
	}
}

func TestUnlistedHostRefused(t *testing.T) {
	e := newEnv(t)
	e.dns.set("other.test", []string{"127.0.0.1"})
	res := e.get(sandboxA, "other.test", "/")
	if res.status != http.StatusForbidden {
		t.Fatalf("unlisted host: %d %q, want 403", res.status, res.body)
	}
	if !strings.Contains(res.body, "not a destination") || strings.Contains(res.body, "api.test") {
		t.Errorf("refusal %q must say why and name no other destination", res.body)
	}
	if n := e.dns.queries("other.test"); n != 0 || len(e.up.requests()) != 0 || e.dials.Load() != 0 {
		t.Errorf("unlisted host was looked up %d times, upstream saw %d requests, %d dials", n, len(e.up.requests()), e.dials.Load())
	}
	// A listed name on a port it does not have is not that destination.
	if res := e.get(sandboxA, "api.test:8443", "/"); res.status != http.StatusForbidden {
		t.Errorf("listed host on another port: %d, want 403", res.status)
	}
}

func TestIPLiteralHostRefused(t *testing.T) {
	e := newEnv(t)
	for _, host := range []string{"127.0.0.1", "127.0.0.1:" + strconv.Itoa(e.up.port), "[::1]", "[::1]:443", "93.184.216.34"} {
		res := e.get(sandboxA, host, "/")
		if res.status != http.StatusForbidden || !strings.Contains(res.body, "IP literal") {
			t.Errorf("Host %s: %d %q, want 403 naming the IP literal", host, res.status, res.body)
		}
	}
	if len(e.up.requests()) != 0 || e.dials.Load() != 0 {
		t.Errorf("an IP literal reached the network: %d upstream requests, %d dials", len(e.up.requests()), e.dials.Load())
	}
}

func TestLoopbackRefusedWithoutAllowList(t *testing.T) {
	e := newEnv(t, withoutAllowList)
	res := e.get(sandboxA, "api.test", "/")
	if res.status != http.StatusForbidden || !strings.Contains(res.body, "address refused") {
		t.Fatalf("listed name on loopback without the allow-list: %d %q, want 403", res.status, res.body)
	}
	if len(e.up.requests()) != 0 || len(e.connected()) != 0 {
		t.Errorf("the loopback server was reached: %d requests, connects %v", len(e.up.requests()), e.connected())
	}
	// ::1 as well.
	e.dns.set("api.test", []string{"::1"})
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusForbidden {
		t.Errorf("listed name on ::1: %d, want 403", res.status)
	}
}

func TestPrivateAddressRefusedWithoutDial(t *testing.T) {
	// The allow-list reopens loopback only: 10/8 stays refused.
	e := newEnv(t)
	for _, addrs := range [][]string{{"10.0.0.1"}, {"169.254.169.254"}, {"100.64.0.1", "fd00::1"}, {"::ffff:10.0.0.1"}} {
		e.dns.set("api.test", addrs)
		res := e.get(sandboxA, "api.test", "/")
		if res.status != http.StatusForbidden || !strings.Contains(res.body, "address refused") {
			t.Errorf("api.test at %v: %d %q, want 403", addrs, res.status, res.body)
		}
	}
	if n := e.dials.Load(); n != 0 {
		t.Errorf("%d dials for names resolving only to refused addresses; want none", n)
	}
	if c := e.connected(); len(c) != 0 {
		t.Errorf("connected to %v", c)
	}
}

func TestClusterRangesRefusedDespiteAllowList(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Cluster.NodeAddresses = []string{"127.0.0.1"} })
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusForbidden {
		t.Fatalf("destination on a node address: %d, want 403 even though loopback is allowed", res.status)
	}
	if len(e.up.requests()) != 0 || e.dials.Load() != 0 {
		t.Errorf("the node address was dialed")
	}
}

func TestRebindingRefusedAtDial(t *testing.T) {
	e := newEnv(t, withoutAllowList)
	// The check's lookup sees a public-looking TEST-NET address; the
	// dialer's own lookup then gets loopback.
	e.dns.set("api.test", []string{"192.0.2.10"}, []string{"127.0.0.1"})
	res := e.get(sandboxA, "api.test", "/")
	if res.status != http.StatusForbidden || !strings.Contains(res.body, "address refused") {
		t.Fatalf("rebinding to loopback: %d %q, want 403", res.status, res.body)
	}
	if e.dials.Load() != 1 {
		t.Errorf("dials = %d: the resolution check should have passed (TEST-NET) and the dial been refused", e.dials.Load())
	}
	if q := e.dns.queries("api.test"); q != 2 {
		t.Errorf("api.test looked up %d times, want 2 (check, then dial)", q)
	}
	if len(e.up.requests()) != 0 || len(e.connected()) != 0 {
		t.Errorf("rebinding reached the loopback server: %d requests, connects %v", len(e.up.requests()), e.connected())
	}
}

func TestRedirectReturnedNotFollowed(t *testing.T) {
	e := newEnv(t)
	e.dns.set("evil.test", []string{"127.0.0.1"})
	const loc = "https://evil.test/steal?x=1"
	e.up.handler = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, loc, http.StatusFound) }
	res := e.get(sandboxA, "api.test", "/start")
	if res.status != http.StatusFound || res.header.Get("Location") != loc {
		t.Fatalf("got %d Location %q, want the 302 back untouched", res.status, res.header.Get("Location"))
	}
	if n := e.dns.queries("evil.test"); n != 0 || len(e.up.requests()) != 1 {
		t.Errorf("the redirect was followed: evil.test looked up %d times, upstream saw %d requests", n, len(e.up.requests()))
	}
	// The next request, to the redirect's host, is judged on its own.
	if res := e.get(sandboxA, "evil.test", "/steal"); res.status != http.StatusForbidden {
		t.Errorf("request to the redirect's host: %d, want 403", res.status)
	}
}

func TestCONNECTRefused(t *testing.T) {
	e := newEnv(t)
	c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("CONNECT: %d, want 405", res.StatusCode)
	}
	if e.dials.Load() != 0 || len(e.up.requests()) != 0 {
		t.Errorf("CONNECT reached the network")
	}
}

func TestUpgradeRefused(t *testing.T) {
	e := newEnv(t)
	res := e.do(sandboxA, http.MethodGet, "api.test", "/ws", nil, http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}})
	if res.status != http.StatusForbidden || len(e.up.requests()) != 0 {
		t.Errorf("upgrade: %d with %d upstream requests, want 403 and none", res.status, len(e.up.requests()))
	}
}

func TestCertificateFromAnotherCARefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cert func(e *env) *upstream
	}{
		{"another CA", func(e *env) *upstream { return newUpstream(t, newTestCA(t, "another-ca").leaf(t, "api.test"), nil) }},
		{"the CA, another name", func(e *env) *upstream { return newUpstream(t, e.ca.leaf(t, "not-api.test"), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var server *upstream
			e := newEnv(t, func(c *Config, e *env) {
				server = tc.cert(e)
				c.Destinations[0].Port = server.port
			})
			res := e.get(sandboxA, "api.test", "/")
			if res.status != http.StatusBadGateway || !strings.Contains(res.body, "certificate") {
				t.Fatalf("%d %q, want 502 naming the certificate", res.status, res.body)
			}
			if len(server.requests()) != 0 {
				t.Errorf("a request reached the server with the untrusted certificate")
			}
		})
	}
}

func TestRequestBudgetPerCaller(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.RequestsPerMinute = 2 })
	for i := range 2 {
		if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusOK {
			t.Fatalf("request %d within budget: %d", i+1, res.status)
		}
	}
	res := e.get(sandboxA, "api.test", "/")
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("third request in a minute of a 2/min budget: %d, want 429", res.status)
	}
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After = %q, want whole seconds within the minute", res.header.Get("Retry-After"))
	}
	if res := e.get(sandboxB, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("another sandbox while the first is over budget: %d, want 200", res.status)
	}
	// The bucket refills on the (fake) clock: 30 s is one request's worth.
	e.clock.Advance(30 * time.Second)
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("after the budget refilled: %d, want 200", res.status)
	}
	if n := len(e.up.requests()); n != 4 {
		t.Errorf("upstream saw %d requests, want 4 (the refused one never left)", n)
	}
}

func TestByteBudgetPerCaller(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.BytesPerMinute = 1000 })
	e.up.handler = func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 1500)) }
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusOK || len(res.body) != 1500 {
		t.Fatalf("first request: %d with %d bytes", res.status, len(res.body))
	}
	res := e.get(sandboxA, "api.test", "/")
	if res.status != http.StatusTooManyRequests || !strings.Contains(res.body, "bytes") {
		t.Fatalf("after 1500 bytes of a 1000/min budget: %d %q, want 429", res.status, res.body)
	}
	if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 30 || ra > 61 {
		t.Errorf("Retry-After = %d, want the time to pay 500 bytes of debt at 1000/min (31 s)", ra)
	}
	if res := e.get(sandboxB, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("another sandbox: %d, want 200", res.status)
	}
}

func TestConcurrentRequestBudget(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.ConcurrentRequests = 1 })
	entered, release := make(chan struct{}), make(chan struct{})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
	}
	done := make(chan response)
	go func() { done <- e.get(sandboxA, "api.test", "/slow") }()
	<-entered
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusTooManyRequests {
		t.Errorf("second concurrent request of a 1-request budget: %d, want 429", res.status)
	}
	if res := e.get(sandboxB, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("another sandbox meanwhile: %d, want 200", res.status)
	}
	close(release)
	if res := <-done; res.status != http.StatusOK {
		t.Errorf("the slow request: %d", res.status)
	}
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("after the slow request ended: %d, want 200", res.status)
	}
}

func TestConnectionBudget(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.Connections = 1 })
	first, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	res, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatalf("second connection: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "connection") {
		t.Errorf("second connection of a 1-connection budget: %d %q, want 429", res.StatusCode, body)
	}
	// The first still works, and another address is not counted with it.
	io.WriteString(first, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	if res, err := http.ReadResponse(bufio.NewReader(first), nil); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("first connection: %v %v", res, err)
	}
	if res := e.get(sandboxB, "api.test", "/"); res.status != http.StatusOK {
		t.Errorf("another sandbox's connection: %d", res.status)
	}
}

func TestUnknownCallerRefused(t *testing.T) {
	e := newEnv(t)
	if res := e.get(stranger, "api.test", "/"); res.status != http.StatusForbidden || !strings.Contains(res.body, "unknown caller") {
		t.Errorf("a caller no sandbox: %d %q, want 403", res.status, res.body)
	}
	if len(e.up.requests()) != 0 {
		t.Errorf("an unknown caller's request went out")
	}
}

func TestOversizedRequest(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.MaxRequestBytes = 64 })
	big := strings.Repeat("x", 100)
	res := e.do(sandboxA, http.MethodPost, "api.test", "/", strings.NewReader(big), nil)
	if res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("100-byte body over a 64-byte limit: %d, want 413", res.status)
	}
	if len(e.up.requests()) != 0 {
		t.Errorf("an oversized request with a length went upstream")
	}
	// Without a length (chunked), the limit cuts the stream.
	res = e.do(sandboxA, http.MethodPost, "api.test", "/", io.MultiReader(strings.NewReader(big)), nil)
	if res.status != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked 100-byte body: %d, want 413", res.status)
	}
	// At the limit is fine.
	if res := e.do(sandboxA, http.MethodPost, "api.test", "/", strings.NewReader(big[:64]), nil); res.status != http.StatusOK {
		t.Errorf("64-byte body at the limit: %d", res.status)
	}
}

func TestOversizedResponse(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *env) { c.Budgets.MaxResponseBytes = 100 })
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			for range 10 {
				w.Write(make([]byte, 100))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 1000))
	}
	if res := e.get(sandboxA, "api.test", "/known"); res.status != http.StatusBadGateway {
		t.Errorf("1000-byte response of known length over a 100-byte limit: %d, want 502", res.status)
	}
	res := e.get(sandboxA, "api.test", "/stream")
	if res.err == nil || len(res.body) > 100 {
		t.Errorf("streamed 1000-byte response: read %d bytes, error %v; want it cut at 100", len(res.body), res.err)
	}
	lines := e.auditLines()
	if last := lines[len(lines)-1]; last["cut"] != true {
		t.Errorf("the cut response's audit line does not say so: %v", last)
	}
}

func TestHeaderSizesBounded(t *testing.T) {
	e := newEnv(t)
	huge := strings.Repeat("h", 80<<10)
	if res := e.do(sandboxA, http.MethodGet, "api.test", "/", nil, http.Header{"X-Big": {huge}}); res.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an 80 KiB request header: %d, want 431", res.status)
	}
	if len(e.up.requests()) != 0 {
		t.Errorf("the oversized request header went upstream")
	}
	e.up.handler = func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Big", huge) }
	if res := e.get(sandboxA, "api.test", "/"); res.status != http.StatusBadGateway {
		t.Errorf("an 80 KiB response header: %d, want 502", res.status)
	}
}

// A sandbox that closes its side while the destination is still answering
// (busybox nc half-closes once its request is sent) gets no answer: before,
// the gateway sent an empty 200 that read as the destination's.
func TestSandboxGoneGetsNoAnswer(t *testing.T) {
	e := newEnv(t)
	arrived := make(chan struct{})
	var once sync.Once
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		<-r.Context().Done()
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(sandboxA)}}
	c, err := d.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n")
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the destination")
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, _ := io.ReadAll(c)
	if len(got) != 0 {
		t.Errorf("a sandbox that went away was answered:\n%s", got)
	}
	var line map[string]any
	for i := 0; i < 100 && line == nil; i++ {
		for _, l := range e.auditLines() {
			if l["path"] == "/slow" {
				line = l
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line == nil || line["status"] != float64(statusClientClosed) || line["cut"] == true {
		t.Errorf("audit line for the request: %v, want status %d and not cut", line, statusClientClosed)
	}
}

// Every answer the gateway makes itself carries RefusalHeader with its
// reason; a destination's own refusal, relayed, never does: a client tells
// "the gateway said no" from "the API said no" by the header, not the status
// (a destination that sends the header itself has it removed).
func TestRefusalsMarkedRelayedAnswersNot(t *testing.T) {
	var server *upstream
	e := newEnv(t, func(c *Config, e *env) {
		server = newUpstream(t, e.ca.leaf(t, "api.test"), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(RefusalHeader, "forged by the destination")
			w.WriteHeader(http.StatusForbidden)
		})
		c.Destinations[0].Port = server.port
	})
	e.dns.set("other.test", []string{"127.0.0.1"})
	for _, host := range []string{"other.test", "127.0.0.1"} {
		res := e.get(sandboxA, host, "/")
		if got := res.header.Get(RefusalHeader); res.status != http.StatusForbidden || got == "" || !strings.Contains(res.body, got) {
			t.Errorf("Host %s: %d, %s %q, body %q: want 403 with the reason in the header and the body", host, res.status, RefusalHeader, got, res.body)
		}
	}
	res := e.get(sandboxA, "api.test", "/")
	if res.status != http.StatusForbidden || len(server.requests()) != 1 {
		t.Fatalf("the destination's own 403: %d after %d upstream requests", res.status, len(server.requests()))
	}
	if got := res.header.Get(RefusalHeader); got != "" {
		t.Errorf("a relayed 403 carries %s %q: it would read as the gateway's refusal", RefusalHeader, got)
	}
}

func TestHeaderSafe(t *testing.T) {
	if got := headerSafe("host \"a\r\nX-Evil: 1\u00e9\" refused"); got != `host "a??X-Evil: 1?" refused` {
		t.Errorf("headerSafe: %q", got)
	}
}
