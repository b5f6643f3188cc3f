// Command paddock-gateway serves a tenant's egress gateway (internal/gateway)
// from its configuration file (-config). With -check it only loads the
// configuration and the credential files, says what it would serve and
// exits. SIGTERM or SIGINT stops taking connections and lets the requests
// in flight finish (at most -drain); SIGHUP, and a tick every minute,
// re-read the credential files, so a rotated Secret is picked up.
//
// It names each caller from the tenant namespace's pods and Sandboxes
// (internal/gateway/cluster): the pod, its sandbox and the claim it serves;
// an address that is no sandbox pod of the namespace is refused. It reaches
// the API server with its own service account's token (in-cluster), or with
// -kubeconfig, and serves only once its informers hold the namespace
// (-sync-timeout bounds the wait). tokenReview mode reviews each sandbox's
// token with the TokenReview API.
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
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/gateway/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// connector makes the API clients: in-cluster when kubeconfig is "".
type connector func(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error)

func connect(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, nil, fmt.Errorf("in-cluster API access: %w (outside a cluster, give -kubeconfig)", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("-kubeconfig: %w", err)
	}
	cfg.UserAgent = "paddock-gateway"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, dyn, nil
}

// serviceAccountNamespace is where the kubelet writes the pod's namespace
// beside its service-account token.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// run serves until ctx ends; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "loadgen" {
		return runLoadgen(ctx, args[1:], stdout, stderr) // loadgen.go
	}
	return serve(ctx, args, stdout, stderr, connect)
}

// serve is run with the API clients made by conn (fakes in tests).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, conn connector) int {
	fs := flag.NewFlagSet("paddock-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the gateway's configuration file (JSON)")
	check := fs.Bool("check", false, "load the configuration and the credential files, then exit")
	drain := fs.Duration("drain", 25*time.Second, "how long requests in flight may finish after SIGTERM")
	namespace := fs.String("namespace", "", "the tenant namespace whose sandboxes the gateway serves (default: its own pod's)")
	kubeconfig := fs.String("kubeconfig", "", "a kubeconfig file, for a gateway run outside the cluster (default: in-cluster)")
	syncTimeout := fs.Duration("sync-timeout", 30*time.Second, "how long to wait for the namespace's pods and Sandboxes before giving up")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: paddock-gateway -config FILE [-check] [-drain DURATION] [-namespace NS] [-kubeconfig FILE] [-sync-timeout DURATION]")
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stdout, nil))
	cfg, err := gateway.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	if *check {
		// -check reaches no API server: stand-ins for the cluster layer.
		g, err := gateway.New(cfg, gateway.Options{Logger: logger, Identifier: gateway.AddressIdentifier{}, TokenReviewer: checkOnly{}})
		if err != nil {
			fmt.Fprintln(stderr, "paddock-gateway:", err)
			return 1
		}
		g.Close()
		fmt.Fprintf(stdout, "paddock-gateway: %s is valid: %d destinations, listening on %s\n", *configPath, len(cfg.Destinations), cfg.Listen)
		return 0
	}

	ns := *namespace
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			fmt.Fprintln(stderr, "paddock-gateway: -namespace is required outside a pod:", err)
			return 2
		}
		ns = strings.TrimSpace(string(b))
	}
	kube, dyn, err := conn(*kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	id, err := cluster.NewIdentifier(kube, dyn, ns)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	// The informers run until run returns, draining included.
	ictx, stopInformers := context.WithCancel(context.Background())
	defer stopInformers()
	id.Start(ictx)
	if err := id.WaitForSync(ctx, *syncTimeout); err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	opts := gateway.Options{Logger: logger, Identifier: id}
	if cfg.Identify.Mode == gateway.IdentifyTokenReview {
		opts.TokenReviewer = cluster.NewTokenReviewer(kube, id)
	}
	g, err := gateway.New(cfg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	defer g.Close()

	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "paddock-gateway:", err)
		return 1
	}
	srv := g.Server()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.LimitListener(l)) }()
	logger.Info("serving", "listen", l.Addr().String(), "destinations", len(cfg.Destinations), "namespace", ns)

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

// checkOnly stands in for the TokenReview client under -check, which
// reaches no API server.
type checkOnly struct{}

func (checkOnly) Review(context.Context, string, string) (gateway.Caller, error) {
	return gateway.Caller{}, gateway.ErrUnknownCaller
}

// reload re-reads the credentials; on an error (which names the file, never
// its content) the ones in use stay.
func reload(g *gateway.Gateway, logger *slog.Logger) {
	if err := g.ReloadCredentials(); err != nil {
		logger.Error("credentials not reloaded; the previous ones stay", "error", err.Error())
	}
}
