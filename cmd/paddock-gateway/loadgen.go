package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/loadgen"
)

// loadgenUsage is the subcommand's synopsis.
const loadgenUsage = "usage: paddock-gateway loadgen -url URL [-proxy http://HOST:PORT] [-ca FILE|-] [-c N] (-d DURATION | -n REQUESTS) [-warmup DURATION] [-ready DURATION] [-json]\n       paddock-gateway loadgen -idle"

// loadgenStdin is where -ca - reads the CAs (a test's reader in tests).
var loadgenStdin io.Reader = os.Stdin

// runLoadgen is `paddock-gateway loadgen`: GET requests to -url from -c
// workers over kept-alive connections, through -proxy (the egress gateway)
// or directly, measured for -d or -n requests. The gateway benchmark runs it
// in a sandbox pod, which is why it lives in the gateway's binary: the
// image is already on the node and holds nothing else. With -idle it only
// waits for SIGTERM: a sandbox of the gateway's image (which has no shell)
// stays up for the runs the benchmark execs in it. Exit 0 when the run was
// measured (its errors are in the report), 1 when it could not be, 2 on a
// usage error.
func runLoadgen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("paddock-gateway loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", "", "the URL to GET: https://host:port/path directly, or http://host:port/path through -proxy")
	proxy := fs.String("proxy", "", "the HTTP proxy (the egress gateway) as http://host:port; empty for a direct connection (http_proxy is not read)")
	caFile := fs.String("ca", "", "PEM file of the CAs the server's certificate is verified against, - for standard input (default: the system roots)")
	conc := fs.Int("c", 8, "workers, each with one request in flight and one kept-alive connection")
	dur := fs.Duration("d", 0, "how long to measure")
	count := fs.Int("n", 0, "how many requests to measure (with -d too, whichever comes first)")
	warmup := fs.Duration("warmup", 0, "time spent sending requests that are not counted, before measuring (connections and TLS handshakes made)")
	ready := fs.Duration("ready", 0, "retry one request until it is answered 200 for at most this long before starting (a new pod's network policy may take a moment)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on one request")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	idle := fs.Bool("idle", false, "send nothing: wait for SIGTERM (a sandbox's process, for runs exec'd beside it)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *idle {
		if *target != "" || fs.NArg() > 0 {
			fmt.Fprintln(stderr, loadgenUsage)
			return 2
		}
		<-ctx.Done()
		return 0
	}
	if *target == "" || fs.NArg() > 0 || (*dur <= 0 && *count <= 0) {
		fmt.Fprintln(stderr, loadgenUsage)
		return 2
	}
	o := loadgen.Options{URL: *target, Proxy: *proxy, Concurrency: *conc, Duration: *dur, Requests: *count,
		Warmup: *warmup, Ready: *ready, Timeout: *timeout}
	if *caFile != "" {
		var pem []byte
		var err error
		if *caFile == "-" {
			pem, err = io.ReadAll(io.LimitReader(loadgenStdin, 1<<20))
		} else {
			pem, err = os.ReadFile(*caFile)
		}
		if err != nil {
			fmt.Fprintln(stderr, "paddock-gateway loadgen: -ca:", err)
			return 1
		}
		o.RootCAs = x509.NewCertPool()
		if !o.RootCAs.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "paddock-gateway loadgen: -ca %s holds no PEM certificate\n", *caFile)
			return 1
		}
	}
	r, err := loadgen.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway loadgen:", err)
		return 1
	}
	if *asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintln(stderr, "paddock-gateway loadgen:", err)
			return 1
		}
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	via := "directly"
	if r.Proxy != "" {
		via = "through " + r.Proxy
	}
	fmt.Fprintf(stdout, "%s %s: %d requests in %.1fs by %d workers (%d connections), %d ok, %.1f/s; latency P50 %.2f ms, P95 %.2f ms, P99 %.2f ms, max %.2f ms; errors: %s\n",
		r.URL, via, r.Requests, r.Seconds, r.Concurrency, r.Connections, r.OK, r.RPS, r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs, errorList(r.Errors))
	return 0
}

// errorList is "none" or the kinds with their counts, in name order.
func errorList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
