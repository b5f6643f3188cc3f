package loadgen

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunDirectTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	r, err := Run(context.Background(), Options{URL: srv.URL + "/echo", RootCAs: pool, Concurrency: 4, Requests: 200})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 200 || r.OK != 200 || len(r.Errors) != 0 {
		t.Fatalf("requests %d, ok %d, errors %v; want 200 answered 200", r.Requests, r.OK, r.Errors)
	}
	// Keep-alive: no more connections than workers.
	if r.Connections < 1 || r.Connections > 4 {
		t.Errorf("%d connections for 4 workers, want 1 to 4 (kept alive)", r.Connections)
	}
	if !(r.P50Ms > 0 && r.P50Ms <= r.P95Ms && r.P95Ms <= r.P99Ms && r.P99Ms <= r.MaxMs) {
		t.Errorf("percentiles out of order: P50 %v P95 %v P99 %v max %v", r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs)
	}
	if r.RPS <= 0 || r.Seconds <= 0 || r.BytesRead != 200*int64(len("hello\n")) {
		t.Errorf("rps %v, seconds %v, bytes %d", r.RPS, r.Seconds, r.BytesRead)
	}
}

// proxyRecorder stands for the gateway: it answers every request itself
// and records the request lines it got.
type proxyRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (p *proxyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.lines = append(p.lines, r.Method+" "+r.RequestURI)
	p.mu.Unlock()
	io.WriteString(w, "through\n")
}

func TestRunThroughProxyForDuration(t *testing.T) {
	p := &proxyRecorder{}
	srv := httptest.NewServer(p)
	defer srv.Close()

	r, err := Run(context.Background(), Options{URL: "http://api.example.test:8443/echo", Proxy: srv.URL,
		Concurrency: 2, Duration: 100 * time.Millisecond, Warmup: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK == 0 || r.OK != r.Requests {
		t.Fatalf("requests %d, ok %d, errors %v", r.Requests, r.OK, r.Errors)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The warmup's requests reach the proxy too, but are not counted.
	if len(p.lines) <= r.Requests-1 {
		t.Errorf("the proxy saw %d requests, the run counted %d", len(p.lines), r.Requests)
	}
	for _, l := range p.lines {
		if l != "GET http://api.example.test:8443/echo" {
			t.Fatalf("the proxy got %q, want the absolute-form request line", l)
		}
	}
	if r.Proxy != srv.URL || r.Connections > 2 {
		t.Errorf("proxy %q, connections %d", r.Proxy, r.Connections)
	}
}

func TestRunCountsErrorsByKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "over budget", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{URL: srv.URL, Concurrency: 3, Requests: 30})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != 0 || r.Requests != 30 || r.Errors["status_429"] != 30 || r.RPS != 0 || r.P50Ms != 0 {
		t.Errorf("got %+v, want 30 requests all status_429 and no latency", r)
	}

	// A port nothing listens on: refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, err = Run(context.Background(), Options{URL: "http://" + addr + "/", Concurrency: 1, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors["refused"] != 3 {
		t.Errorf("errors %v, want 3 refused", r.Errors)
	}

	// A certificate of an unknown authority.
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	r, err = Run(context.Background(), Options{URL: tlsSrv.URL, RootCAs: x509.NewCertPool(), Concurrency: 1, Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors["tls"] != 2 {
		t.Errorf("errors %v, want 2 tls", r.Errors)
	}
}

func TestReadyWaitsForTheFirst200(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{URL: srv.URL, Concurrency: 1, Requests: 5, Ready: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != 5 || len(r.Errors) != 0 {
		t.Errorf("after ready: ok %d, errors %v; want the 5 measured requests answered", r.OK, r.Errors)
	}

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer never.Close()
	_, err = Run(context.Background(), Options{URL: never.URL, Concurrency: 1, Requests: 1, Ready: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "status_403") {
		t.Errorf("ready never reached: %v, want an error naming status_403", err)
	}
}

func TestRunStopsWithTheCaller(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Options{URL: srv.URL, Concurrency: 1, Duration: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled run: %v, want context.Canceled", err)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{
		{Concurrency: 1, Requests: 1},
		{URL: "ftp://x/", Concurrency: 1, Requests: 1},
		{URL: "http://x/", Concurrency: 0, Requests: 1},
		{URL: "http://x/", Concurrency: 1},
		{URL: "http://x/", Concurrency: 1, Requests: 1, Proxy: "socks5://p:1"},
		{URL: "http://x/", Concurrency: 1, Requests: 1, Warmup: -time.Second},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

func TestKind(t *testing.T) {
	for err, want := range map[error]string{
		context.DeadlineExceeded:           "timeout",
		&net.DNSError{Err: "no such host"}: "dns",
		io.ErrUnexpectedEOF:                "eof",
		fmt.Errorf("wrapped: %w", io.EOF):  "eof",
		errors.New("something else"):       "other",
	} {
		if got := Kind(err); got != want {
			t.Errorf("Kind(%v) = %s, want %s", err, got, want)
		}
	}
}
