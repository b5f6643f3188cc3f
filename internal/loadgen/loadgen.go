// Package loadgen sends GET requests to one URL from a fixed number of
// workers over kept-alive connections, directly or through an HTTP proxy
// (the egress gateway), and reports what it measured: requests, errors by
// kind, requests per second and latency percentiles. It is the load
// generator of `paddock-gateway loadgen`, which the gateway benchmark runs
// inside a sandbox; it uses net/http alone, so the gateway's image carries
// it at no cost.
package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options say what to load and how hard.
type Options struct {
	// URL is requested with GET. Through a proxy it is http://host:port/…
	// (the gateway speaks TLS to the destination itself).
	URL string
	// Proxy is the HTTP proxy's URL (http://gateway:8080); "" for none. The
	// environment's http_proxy is never read: the benchmark says which path
	// it measures.
	Proxy string
	// RootCAs verify the server's certificate (direct https); nil for the
	// system roots.
	RootCAs *x509.CertPool
	// Concurrency is the number of workers, each with its own request in
	// flight and at most one connection.
	Concurrency int
	// Duration ends the measured run; Requests ends it after that many
	// measured requests. At least one of them is set; with both, whichever
	// comes first.
	Duration time.Duration
	Requests int
	// Warmup is spent sending requests that are not counted, so that the
	// connections (and their TLS handshakes) are made before measuring.
	Warmup time.Duration
	// Ready, when set, is how long one request may be retried until it is
	// answered 200 before anything is sent: a pod's network policy may take
	// a moment to apply after it starts.
	Ready time.Duration
	// Timeout bounds one request (10 s when zero).
	Timeout time.Duration
}

// Result is one run's measurements, the JSON `paddock-gateway loadgen
// -json` prints.
type Result struct {
	URL         string `json:"url"`
	Proxy       string `json:"proxy,omitempty"`
	Concurrency int    `json:"concurrency"`
	// Seconds is the measured wall time, warmup excluded: the duration and
	// the last requests in flight at its end.
	Seconds float64 `json:"seconds"`
	// Requests are those completed in the measured time, OK those answered
	// 200 and read whole; the others are in Errors by kind (status_NNN,
	// timeout, refused, reset, eof, tls, dns, other).
	Requests int            `json:"requests"`
	OK       int            `json:"ok"`
	Errors   map[string]int `json:"errors,omitempty"`
	// RPS is OK per second of measured time.
	RPS float64 `json:"rps"`
	// Latencies of the OK requests (request sent to body read), in
	// milliseconds: nearest-rank percentiles.
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	MeanMs float64 `json:"meanMs"`
	// Connections is how many connections the run opened (warmup and ready
	// included): with keep-alive working it is at most Concurrency.
	Connections int64 `json:"connections"`
	// BytesRead is the response bodies' total in the measured time.
	BytesRead int64 `json:"bytesRead"`
}

// Run loads o.URL until the duration or the request count is reached, or
// ctx ends (then it returns what it measured so far, with ctx's error).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	var conns atomic.Int64
	client, err := o.client(&conns)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()

	if o.Ready > 0 {
		if err := waitReady(ctx, client, o.URL, o.Ready); err != nil {
			return nil, err
		}
	}
	if o.Warmup > 0 {
		load(ctx, client, o.URL, o.Concurrency, time.Now().Add(o.Warmup), -1)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	var until time.Time // zero: no end by time
	start := time.Now()
	if o.Duration > 0 {
		until = start.Add(o.Duration)
	}
	limit := int64(-1)
	if o.Requests > 0 {
		limit = int64(o.Requests)
	}
	tallies := load(ctx, client, o.URL, o.Concurrency, until, limit)
	elapsed := time.Since(start)
	r := summarize(tallies, elapsed)
	r.URL, r.Proxy, r.Concurrency, r.Connections = o.URL, o.Proxy, o.Concurrency, conns.Load()
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, nil
}

func (o Options) check() error {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		return errors.New("no URL to load: give -url")
	case err != nil:
		return fmt.Errorf("the URL %q: %v", o.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("the URL %q is not http://host/… or https://host/…", o.URL)
	case o.Concurrency < 1:
		return fmt.Errorf("concurrency %d: give at least 1", o.Concurrency)
	case o.Duration <= 0 && o.Requests <= 0:
		return errors.New("no end to the run: give a duration, a request count, or both")
	case o.Duration < 0 || o.Requests < 0 || o.Warmup < 0 || o.Ready < 0:
		return errors.New("a duration or a count is negative")
	}
	if o.Proxy != "" {
		p, err := url.Parse(o.Proxy)
		if err != nil || p.Scheme != "http" || p.Host == "" {
			return fmt.Errorf("the proxy %q is not http://host:port", o.Proxy)
		}
	}
	return nil
}

// client is an HTTP/1.1 client with one kept-alive connection per worker
// at most; conns counts the connections it dials.
func (o Options) client(conns *atomic.Int64) (*http.Client, error) {
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				conns.Add(1)
			}
			return c, err
		},
		TLSClientConfig:     &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: o.Timeout,
		MaxIdleConns:        o.Concurrency,
		MaxIdleConnsPerHost: o.Concurrency,
		MaxConnsPerHost:     o.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		// Plain HTTP/1.1 both ways, so each worker holds its own
		// connection: a custom TLS config alone already keeps HTTP/2 off.
		ForceAttemptHTTP2: false,
	}
	if o.Proxy != "" {
		p, err := url.Parse(o.Proxy)
		if err != nil {
			return nil, err
		}
		tr.Proxy = http.ProxyURL(p)
	}
	return &http.Client{
		Transport: tr,
		Timeout:   o.Timeout,
		// A redirect is an answer to count, not one to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// waitReady retries one request until it is answered 200, for at most
// within; the error names the last answer.
func waitReady(ctx context.Context, c *http.Client, u string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, kind, _ := once(ctx, c, u)
		if kind == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s (last: %s): is the path open (network policy, proxy, certificate)?", u, within, kind)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tally is one worker's count.
type tally struct {
	requests int
	errors   map[string]int
	latency  []time.Duration
	bytes    int64
}

// load runs n workers until ctx ends, until passes (unless zero) or limit
// requests were claimed (limit < 0: no limit). A worker sends no request
// after until but lets the one in flight finish: cancelling it would close
// its kept-alive connection, and the next phase would pay for a new one.
func load(ctx context.Context, c *http.Client, u string, n int, until time.Time, limit int64) []tally {
	var claimed atomic.Int64
	out := make([]tally, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(t *tally) {
			defer wg.Done()
			t.errors = map[string]int{}
			for ctx.Err() == nil && (until.IsZero() || time.Now().Before(until)) {
				if limit >= 0 && claimed.Add(1) > limit {
					return
				}
				d, kind, nb := once(ctx, c, u)
				// A request cut short by the caller is not counted: it
				// failed because the run stopped, not the server.
				if kind != "" && ctx.Err() != nil {
					return
				}
				t.requests++
				if kind != "" {
					t.errors[kind]++
					continue
				}
				t.latency = append(t.latency, d)
				t.bytes += nb
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}

// once sends one GET and reads the body whole: how long it took, the
// error's kind ("" for a 200) and the body's size.
func once(ctx context.Context, c *http.Client, u string) (time.Duration, string, int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "other", 0
	}
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		return 0, Kind(err), 0
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	d := time.Since(start)
	if err != nil {
		return d, Kind(err), n
	}
	if res.StatusCode != http.StatusOK {
		return d, fmt.Sprintf("status_%d", res.StatusCode), n
	}
	return d, "", n
}

// Kind names an error's kind for the error counts.
func Kind(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return "tls"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}

// summarize merges the workers' tallies.
func summarize(ts []tally, elapsed time.Duration) *Result {
	r := &Result{Seconds: elapsed.Seconds()}
	var all []time.Duration
	for _, t := range ts {
		r.Requests += t.requests
		r.BytesRead += t.bytes
		all = append(all, t.latency...)
		for k, v := range t.errors {
			if r.Errors == nil {
				r.Errors = map[string]int{}
			}
			r.Errors[k] += v
		}
	}
	r.OK = len(all)
	if elapsed > 0 {
		r.RPS = round(float64(r.OK)/elapsed.Seconds(), 1)
	}
	if len(all) == 0 {
		return r
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	ms := func(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }
	r.P50Ms, r.P95Ms, r.P99Ms = ms(percentile(all, 50)), ms(percentile(all, 95)), ms(percentile(all, 99))
	r.MaxMs, r.MeanMs = ms(all[len(all)-1]), ms(sum/time.Duration(len(all)))
	return r
}

// percentile is the nearest-rank percentile p of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(rank, 1)
	return sorted[rank-1]
}

func round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}
