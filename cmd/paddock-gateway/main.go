// Command paddock-gateway serves a tenant's egress gateway (internal/gateway)
// from its configuration file (-config). With -check it only loads the
// configuration and the credential files, says what it would serve and
// exits. SIGTERM or SIGINT stops taking connections and lets the requests
// in flight finish (at most -drain); SIGHUP, and a tick every minute,
// re-read the credential files, so a rotated Secret is picked up.
//
// It identifies callers by pod address, each address its own sandbox, until
// the cluster layer gives it a pod informer; tokenReview mode needs that
// layer's TokenReview client and is refused here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run serves until ctx ends; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "loadgen" {
		return runLoadgen(ctx, args[1:], stdout, stderr) // loadgen.go
	}
	fs := flag.NewFlagSet("paddock-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the gateway's configuration file (JSON)")
	check := fs.Bool("check", false, "load the configuration and the credential files, then exit")
	drain := fs.Duration("drain", 25*time.Second, "how long requests in flight may finish after SIGTERM")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: paddock-gateway -config FILE [-check] [-drain DURATION]")
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stdout, nil))
	cfg, err := gateway.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	defer g.Close()
	if *check {
		fmt.Fprintf(stdout, "paddock-gateway: %s is valid: %d destinations, listening on %s\n", *configPath, len(cfg.Destinations), cfg.Listen)
		return 0
	}

	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	srv := g.Server()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.LimitListener(l)) }()
	logger.Info("serving", "listen", l.Addr().String(), "destinations", len(cfg.Destinations))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case err := <-served:
			fmt.Fprintln(stderr, "paddock-gateway:", err)
			return 1
		case <-hup:
			reload(g, logger)
		case <-tick.C:
			reload(g, logger)
		case <-ctx.Done():
			logger.Info("shutting down", "drain", drain.String())
			sctx, cancel := context.WithTimeout(context.Background(), *drain)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				fmt.Fprintln(stderr, "paddock-gateway: shutdown:", err)
				return 1
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(stderr, "paddock-gateway:", err)
				return 1
			}
			return 0
		}
	}
}

// reload re-reads the credentials; on an error (which names the file, never
// its content) the ones in use stay.
func reload(g *gateway.Gateway, logger *slog.Logger) {
	if err := g.ReloadCredentials(); err != nil {
		logger.Error("credentials not reloaded; the previous ones stay", "error", err.Error())
	}
}
