package bench

// The egress gateway's throughput (issue 38): requests per second and the
// latency the gateway adds, against a direct connection to the same test
// server, on the real node.
//
// The test server is the benchmark's own HTTPS server (a CA of its own)
// listening inside the network namespace of one of the local stack's world
// hosts, under the name the cluster resolver answers for it, as in the e2e
// test of the gateway. The load comes from `paddock-gateway loadgen`, exec'd
// in a warm sandbox of the tenant under gVisor whose template runs the
// gateway's own image (already on the node; its process is `loadgen -idle`):
// once through the gateway (plain HTTP to the gateway's Service, which
// speaks TLS upstream and injects the key) and once directly (TLS to the
// server), same workers, same duration, in rounds that alternate which
// path goes first (the shared machine's load drifts; paired rounds and
// their medians keep one busy minute from deciding). A real sandbox, not a pod of the
// bench's own, so the gateway knows the caller as it knows any sandbox.
//
// Both paths run from the one tenant: its egress block opens the world
// host's /30 on the server's port beside the gateway, which the default-deny
// fence otherwise closes (PDK-507 stays quiet: it judges public addresses
// only).

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/loadgen"
	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// SectionGateway is the gateway throughput's entry in MeasuredBy.
const SectionGateway = "gateway"

// The benchmark's tenant, its namespace, key Secret and load pod.
const (
	gatewayBenchTenant    = "gwbench"
	gatewayBenchNamespace = "agents-" + gatewayBenchTenant
	gatewayBenchSecret    = "bench-key"
	gatewayBenchPort      = 8443 // beside the world host's greeting on 443
	gatewayBenchRuntime   = "gvisor"
)

// gatewayBenchHost is the world host the test server listens in.
var gatewayBenchHost = localcluster.WorldHosts[1]

// GatewayOptions say how to run the gateway benchmark.
type GatewayOptions struct {
	// Paddock is the binary measured; the gateway's image is the one its
	// `local up` builds from the paddock-gateway beside it.
	Paddock string
	// Kubectl execs the load generator in the sandbox.
	Kubectl string
	// RealHome lends its tools and provider plugin to the benchmark's own
	// throwaway PADDOCK_HOME.
	RealHome string
	// Concurrency is the load's workers; Duration each path's measured
	// time, after Warmup; Rounds how many times both paths run.
	Concurrency int
	Duration    time.Duration
	Warmup      time.Duration
	Rounds      int
	KeepHome    bool
	Out         io.Writer
}

// GatewayResult is the gateway throughput section.
type GatewayResult struct {
	// Nodes is the node kind (real: gVisor runs the pods).
	Nodes        string `json:"nodes"`
	RuntimeClass string `json:"runtimeClass"`
	// Destination is the test server, host:port.
	Destination string  `json:"destination"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"durationSeconds"`
	Warmup      float64 `json:"warmupSeconds"`
	// Rounds are the runs, each path once per round.
	Rounds []GatewayRound `json:"rounds"`
	// Gateway and Direct are each path's medians over the rounds.
	Gateway GatewayFigures `json:"gateway"`
	Direct  GatewayFigures `json:"direct"`
	// AddedP50Ms and AddedP95Ms are the medians over the rounds of the
	// gateway's latency less the direct's, RPSRatio of the gateway's
	// requests per second over the direct's: paired within a round, so
	// the load of the moment weighs on both sides of each.
	AddedP50Ms float64 `json:"addedP50Ms"`
	AddedP95Ms float64 `json:"addedP95Ms"`
	RPSRatio   float64 `json:"rpsRatio"`
	// KeyInjected counts the requests the server saw with the gateway's
	// key, KeyAbsent those without it (the direct run's, and none of the
	// gateway's if it injects the key into every one).
	KeyInjected int64 `json:"keyInjected"`
	KeyAbsent   int64 `json:"keyAbsent"`
}

// GatewayRound is both paths' runs, First the one that ran first.
type GatewayRound struct {
	First   string     `json:"first"`
	Direct  GatewayRun `json:"direct"`
	Gateway GatewayRun `json:"gateway"`
}

// GatewayFigures are one path's medians over the rounds.
type GatewayFigures struct {
	RPS   float64 `json:"rps"`
	P50Ms float64 `json:"p50Ms"`
	P95Ms float64 `json:"p95Ms"`
	P99Ms float64 `json:"p99Ms"`
}

// GatewayRun is one path's load: how it went and how loaded the machine
// was (1, 5 and 15 minute load averages) when it began and ended.
type GatewayRun struct {
	Path      string          `json:"path"`
	Load      *loadgen.Result `json:"load"`
	LoadStart []float64       `json:"loadAvgStart,omitempty"`
	LoadEnd   []float64       `json:"loadAvgEnd,omitempty"`
}

// Gateway runs the gateway benchmark on a throwaway cluster of its own with
// a real node: it starts the cluster, serves the test server, brings up
// the platform, loads both paths, and takes it all down again.
func Gateway(ctx context.Context, o GatewayOptions) (*GatewayResult, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Concurrency < 1 || o.Duration <= 0 || o.Rounds < 1 {
		return nil, fmt.Errorf("gateway benchmark: concurrency %d, duration %s and rounds %d must be positive", o.Concurrency, o.Duration, o.Rounds)
	}
	home, err := os.MkdirTemp("", "paddock-bench-gateway-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"bin", "pulumi"} {
		if err := os.Symlink(filepath.Join(o.RealHome, d), filepath.Join(home, d)); err != nil {
			return nil, err
		}
	}
	env := append(os.Environ(), "PADDOCK_HOME="+home)
	paddock := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, o.Paddock, args...)
		c.Env = env
		return c
	}
	fmt.Fprintf(o.Out, "paddock-bench: gateway throughput on a cluster with a real node in %s\n", home)
	if out, err := paddock("local", "up", "--nodes", "real").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("local up --nodes real for the gateway benchmark (it needs the real node: -gateway=false skips it): %v\n%s", err, out)
	}
	defer func() {
		// Not ctx: an interrupt cancels it, and the cluster must still go.
		down := exec.Command(o.Paddock, "local", "down")
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "paddock-bench: local down (gateway): %v\n%s", err, out)
		}
		if !o.KeepHome {
			os.RemoveAll(home)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(home, "local", "kubeconfig"))
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}

	ca, err := newBenchCA()
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	keyText := "pdk-bench-" + hex.EncodeToString(key)
	srv, err := serveGatewayDestination(filepath.Join(home, "local"), ca, "Bearer "+keyText)
	if err != nil {
		return nil, err
	}
	defer srv.close()

	dir := filepath.Join(home, "specs", "gateway")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	image, err := gatewayImageOf(o.Paddock)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(gatewayBenchSpec(ca.pem, image, o.Concurrency)), 0o644); err != nil {
		return nil, err
	}
	// The key is the team's Secret: made once up has made the namespace,
	// since the gateway's pods wait for it and up waits for them.
	made := make(chan error, 1)
	sctx, stopSecret := context.WithCancel(ctx)
	defer stopSecret()
	go func() { made <- createKeySecret(sctx, kube, keyText) }()
	if out, err := paddock("up", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("up of the gateway benchmark's platform: %v\n%s", err, out)
	}
	if err := <-made; err != nil {
		return nil, err
	}
	// No destroy: the cluster and its state go with the throwaway home.

	// The sandbox runs the image the gateway runs: the one this paddock's
	// local up imported (the tag is its build's, read from the binary).
	dep, err := kube.AppsV1().Deployments(gatewayBenchNamespace).Get(ctx, manifests.GatewayName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the gateway's Deployment: %w", err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
		return nil, fmt.Errorf("the gateway runs %s, the load sandbox %s: the tag read from %s is not the one its local up imported", got, image, o.Paddock)
	}
	svc, err := kube.CoreV1().Services(gatewayBenchNamespace).Get(ctx, manifests.GatewayName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the gateway's Service: %w", err)
	}
	sandbox, err := loadSandbox(ctx, kube)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(home, "local", "kubeconfig")

	dest := net.JoinHostPort(gatewayBenchHost.Name, strconv.Itoa(gatewayBenchPort))
	res := &GatewayResult{Nodes: "real", RuntimeClass: gatewayBenchRuntime, Destination: dest, Concurrency: o.Concurrency,
		Seconds: o.Duration.Seconds(), Warmup: o.Warmup.Seconds()}
	common := []string{"-c", strconv.Itoa(o.Concurrency), "-d", o.Duration.String(), "-warmup", o.Warmup.String(), "-ready", "2m", "-json"}
	type path struct {
		name, what string
		args       []string
		stdin      string
	}
	// The bench's CA goes in on standard input: the image has no shell to
	// write a file with.
	direct := path{"direct", "direct: TLS from the sandbox to the server", []string{"-url", "https://" + dest + "/echo", "-ca", "-"}, ca.pem}
	through := path{"gateway", "through the gateway: plain HTTP to its Service, TLS from it to the server",
		[]string{"-url", "http://" + dest + "/echo", "-proxy", fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, model.GatewayListenPort)}, ""}
	for i := range o.Rounds {
		var round GatewayRound
		order := []path{direct, through}
		if i%2 == 1 {
			order = []path{through, direct}
		}
		round.First = order[0].name
		for _, pt := range order {
			run := &round.Direct
			if pt.name == through.name {
				run = &round.Gateway
			}
			run.Path = pt.what
			run.LoadStart = LoadAverage()
			got, err := execLoad(ctx, o.Kubectl, kubeconfig, sandbox, append(pt.args, common...), pt.stdin)
			run.LoadEnd = LoadAverage()
			if err != nil {
				return nil, fmt.Errorf("gateway benchmark, round %d, %s: %w", i+1, pt.what, err)
			}
			run.Load = got
			fmt.Fprintf(o.Out, "bench gateway: round %d %-8s %d workers %.0fs: %d ok, %.1f/s, P50 %.2f ms, P95 %.2f ms, P99 %.2f ms, errors %v, %d connections (load %v)\n",
				i+1, pt.name, o.Concurrency, got.Seconds, got.OK, got.RPS, got.P50Ms, got.P95Ms, got.P99Ms, got.Errors, got.Connections, run.LoadEnd)
		}
		res.Rounds = append(res.Rounds, round)
	}
	res.KeyInjected, res.KeyAbsent = srv.withKey.Load(), srv.withoutKey.Load()
	res.derive()
	return res, nil
}

// derive fills in the medians over the rounds that have both runs
// (median: repeat.go's, the upper middle of an even count).
func (r *GatewayResult) derive() {
	var d, g [4][]float64 // rps, P50, P95, P99
	var added50, added95, ratio []float64
	for _, rd := range r.Rounds {
		dl, gl := rd.Direct.Load, rd.Gateway.Load
		if dl == nil || gl == nil {
			continue
		}
		for i, v := range []float64{dl.RPS, dl.P50Ms, dl.P95Ms, dl.P99Ms} {
			d[i] = append(d[i], v)
		}
		for i, v := range []float64{gl.RPS, gl.P50Ms, gl.P95Ms, gl.P99Ms} {
			g[i] = append(g[i], v)
		}
		added50 = append(added50, gl.P50Ms-dl.P50Ms)
		added95 = append(added95, gl.P95Ms-dl.P95Ms)
		if dl.RPS > 0 {
			ratio = append(ratio, gl.RPS/dl.RPS)
		}
	}
	figures := func(v [4][]float64) GatewayFigures {
		return GatewayFigures{RPS: roundTo(median(v[0]), 1), P50Ms: roundTo(median(v[1]), 3), P95Ms: roundTo(median(v[2]), 3), P99Ms: roundTo(median(v[3]), 3)}
	}
	r.Direct, r.Gateway = figures(d), figures(g)
	r.AddedP50Ms, r.AddedP95Ms, r.RPSRatio = roundTo(median(added50), 3), roundTo(median(added95), 3), roundTo(median(ratio), 3)
}

func roundTo(v float64, places int) float64 {
	s := strconv.FormatFloat(v, 'f', places, 64)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// gatewayBenchSpec is the local platform's header (specgen's, no tenants of
// its own) and the benchmark's tenant: one warm sandbox of the gateway's
// image, idle until the load generator is exec'd in it, the direct route to
// the test server's /30 on its port, and the gateway with that server as
// its one destination, budgets wide enough that the load is never refused.
func gatewayBenchSpec(caPEM, image string, concurrency int) string {
	h := gatewayBenchHost
	return specgen.Generate(specgen.Options{Platform: "gateway-bench"}) + fmt.Sprintf(`
tenant %q {
  template "loadgen" {
    image         = %q
    command       = ["%s", "loadgen", "-idle"]
    runtime_class = %q
  }

  warm_pool "loadgen" {
    template = "loadgen"
    replicas = 1
  }

  egress {
    # The direct baseline's route: the test server's /30, on its port.
    allow {
      cidr  = "10.215.%[5]d.0/30"
      ports = [%[6]d]
    }
  }

  egress_gateway {
    allow_cidrs = ["10.215.%[5]d.0/30"]
    ca_bundle   = <<-EOT
%[7]s
    EOT

    destination %[8]q {
      port = %[6]d
      credential {
        secret = %[9]q
      }
    }

    budgets {
      requests_per_minute = 100000
      concurrent_requests = %[10]d
      connections         = %[10]d
    }
  }
}
`, gatewayBenchTenant, image, manifests.GatewayBinary, gatewayBenchRuntime, h.Index, gatewayBenchPort, strings.TrimSpace(caPEM), h.Name, gatewayBenchSecret, 2*concurrency)
}

// createKeySecret makes the gateway's key Secret once the tenant's
// namespace exists (up makes it), for up to five minutes.
func createKeySecret(ctx context.Context, kube kubernetes.Interface, key string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := kube.CoreV1().Namespaces().Get(ctx, gatewayBenchNamespace, metav1.GetOptions{}); err == nil {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gatewayBenchSecret, Namespace: gatewayBenchNamespace},
				StringData: map[string]string{model.DefaultGatewayCredentialKey: key}}
			_, err := kube.CoreV1().Secrets(gatewayBenchNamespace).Create(ctx, s, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return nil
			}
			return fmt.Errorf("creating the gateway's key Secret %s/%s: %w", gatewayBenchNamespace, gatewayBenchSecret, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("namespace %s did not appear within 5 minutes of up starting: see up's output", gatewayBenchNamespace)
}

// gatewayImageOf is the gateway image the local up of the paddock binary
// bin imports: the repository and bin's build version, read from the
// binary's own build information as bin reads it itself.
func gatewayImageOf(bin string) (string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading the build information of %s (its gateway image's tag): %w", bin, err)
	}
	tag := model.RevisionOf(info, true)
	if tag == "" {
		tag = "dev" // model.BuildVersion's, for a build without version control information
	}
	return model.LocalGatewayRepository + ":" + tag, nil
}

// loadSandbox waits for the tenant's warm sandbox (the load generator's)
// to run, and names its pod.
func loadSandbox(ctx context.Context, kube kubernetes.Interface) (string, error) {
	deadline := time.Now().Add(3 * time.Minute)
	gw := labels.SelectorFromSet(manifests.GatewayPodLabels())
	for {
		pods, err := kube.CoreV1().Pods(gatewayBenchNamespace).List(ctx, metav1.ListOptions{LabelSelector: sandboxv1beta1.SandboxTemplateRefHashLabel})
		if err != nil {
			return "", err
		}
		var seen []string
		for _, p := range pods.Items {
			if gw.Matches(labels.Set(p.Labels)) {
				continue
			}
			running := p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
			for _, c := range p.Status.ContainerStatuses {
				running = running && c.Ready
			}
			if running {
				return p.Name, nil
			}
			seen = append(seen, fmt.Sprintf("%s %s%s", p.Name, p.Status.Phase, podConditions(&p)))
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no running sandbox in %s after 3 minutes (pods: %v): did the gateway image start as a sandbox?", gatewayBenchNamespace, seen)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// execLoad runs `paddock-gateway loadgen args` in the sandbox pod, stdin
// on its standard input, and returns what it measured.
func execLoad(ctx context.Context, kubectl, kubeconfig, pod string, args []string, stdin string) (*loadgen.Result, error) {
	cmd := append([]string{"--kubeconfig", kubeconfig, "-n", gatewayBenchNamespace, "exec", "-i", pod, "-c", "agent", "--", manifests.GatewayBinary, "loadgen"}, args...)
	c := exec.CommandContext(ctx, kubectl, cmd...)
	c.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl exec of the load generator in %s/%s: %v\n%s%s", gatewayBenchNamespace, pod, err, tailLines(stderr.String(), 10), tailLines(string(out), 5))
	}
	return parseLoadOutput(string(out)+stderr.String(), true)
}

// parseLoadOutput finds the load generator's JSON line in a pod's output.
func parseLoadOutput(out string, succeeded bool) (*loadgen.Result, error) {
	if strings.Contains(out, "usage: paddock-gateway -config") {
		return nil, errors.New("the gateway image has no loadgen subcommand: its paddock-gateway predates it; rebuild both binaries (make build) and run again, so local up imports the new image")
	}
	if !succeeded {
		return nil, fmt.Errorf("the load generator failed:\n%s", tailLines(out, 10))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var r loadgen.Result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, fmt.Errorf("the load generator's JSON: %w\n%s", err, l)
		}
		return &r, nil
	}
	return nil, fmt.Errorf("the load generator printed no result:\n%s", tailLines(out, 10))
}

// podConditions says why a pod is not done: its unmet conditions and its
// containers' waiting reasons.
func podConditions(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", c.Name, w.Reason, w.Message))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// benchCA is a CA of the benchmark's own, for the test server's
// certificate; the gateway and the direct load trust it alone.
type benchCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newBenchCA() (*benchCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "paddock bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &benchCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}, nil
}

// issue signs a serving certificate for the DNS name host.
func (ca *benchCA) issue(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// gatewayDestination is the test server: /echo answers a short line and
// counts whether the request carried the gateway's key.
type gatewayDestination struct {
	srv                 *http.Server
	withKey, withoutKey atomic.Int64
}

func (d *gatewayDestination) close() { _ = d.srv.Close() }

// destinationHandler answers /echo, counting the requests that carry auth
// as their Authorization and those that do not.
func (d *gatewayDestination) handler(auth string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == auth {
			d.withKey.Add(1)
		} else {
			d.withoutKey.Add(1)
		}
		io.WriteString(w, "destination says hello\n")
	})
	return mux
}

// serveGatewayDestination serves the test server over TLS on the world
// host's address and the bench's port, inside the host's network namespace
// (its holder's pid from the node's report in localDir).
func serveGatewayDestination(localDir string, ca *benchCA, auth string) (*gatewayDestination, error) {
	pid, err := worldHostHolder(localDir, gatewayBenchHost.Name)
	if err != nil {
		return nil, err
	}
	cert, err := ca.issue(gatewayBenchHost.Name)
	if err != nil {
		return nil, err
	}
	l, err := localcluster.ListenInNetns(pid, net.JoinHostPort(gatewayBenchHost.Addr(), strconv.Itoa(gatewayBenchPort)))
	if err != nil {
		return nil, fmt.Errorf("the gateway benchmark's test server in world host %s: %w", gatewayBenchHost.Name, err)
	}
	d := &gatewayDestination{}
	d.srv = &http.Server{Handler: d.handler(auth), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = d.srv.ServeTLS(l, "", "") }()
	return d, nil
}

// worldHostHolder is the pid holding world host name's network namespace,
// from the node's report (node.json in localDir).
func worldHostHolder(localDir, name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(localDir, "node.json"))
	if err != nil {
		return 0, fmt.Errorf("the real node's report: %w (is the cluster's node real?)", err)
	}
	var rep struct {
		Procs map[string]struct {
			Proc *struct {
				PID int `json:"pid"`
			} `json:"proc"`
		} `json:"procs"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return 0, fmt.Errorf("the real node's report: %w", err)
	}
	p := rep.Procs["world-"+name].Proc
	if p == nil || p.PID == 0 {
		return 0, fmt.Errorf("the real node's report names no holder for world host %s: is the node up?", name)
	}
	return p.PID, nil
}

// CarryGateway keeps the gateway figures of old in res when this run did
// not measure them, with who measured them, and says so in the notes.
func CarryGateway(res, old *Results) bool {
	if old == nil || old.Gateway == nil || old.Paddock == nil || res.Gateway != nil {
		return false
	}
	m := old.MeasuredOf(SectionGateway)
	res.Gateway = old.Gateway
	if res.MeasuredBy == nil {
		res.MeasuredBy = map[string]Measured{}
	}
	res.MeasuredBy[SectionGateway] = m
	res.Notes = append(res.Notes, fmt.Sprintf("Egress gateway throughput: not measured by this run (-gateway=false); the figures below are carried over from binary %.12s (%s).", m.Paddock.Commit, m.Date))
	return true
}

// writeGateway is the gateway throughput section of the report.
func (r *Results) writeGateway(w io.Writer) {
	g := r.Gateway
	fmt.Fprintf(w, "\n## Egress gateway throughput\n\n%s", r.measuredLine(SectionGateway))
	fmt.Fprintf(w, "On the %s node, the load generator (`paddock-gateway loadgen`, Go's net/http, HTTP/1.1, one kept-alive connection per worker) runs in a warm sandbox of the tenant under %s whose template runs the gateway's own image (exec'd beside its idle process; the template's default limit of %s CPU). ", g.Nodes, g.RuntimeClass, model.DefaultLimitsCPU)
	fmt.Fprintf(w, "The server is the benchmark's HTTPS server (a CA of its own) at %s, inside the network namespace of that local world host. ", g.Destination)
	fmt.Fprintf(w, "*through the gateway*: plain HTTP to the gateway's Service (one replica, gVisor too, its default limit of %s CPU), which checks the destination, budgets the caller, injects the key, writes its audit line and speaks TLS (HTTP/2) to the server; *direct*: TLS from the sandbox to the server, opened by an egress allow of the same tenant (the default-deny fence closes it otherwise). ", model.GatewayLimitsCPU)
	fmt.Fprintf(w, "%d rounds, each path once per round, the first path alternating; %d workers, %.0f s each after %.0f s of warmup not counted; latency is request sent to body read, of the requests answered 200. ", len(g.Rounds), g.Concurrency, g.Seconds, g.Warmup)
	fmt.Fprintf(w, "The machine (%s) is shared with other work, so the load averages (1, 5, 15 min) at each run's start and end belong with the figures.\n\n", r.Machine)
	fmt.Fprintf(w, "| path | requests/s | P50 (ms) | P95 (ms) | P99 (ms) |\n|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| direct | %.1f | %.2f | %.2f | %.2f |\n", g.Direct.RPS, g.Direct.P50Ms, g.Direct.P95Ms, g.Direct.P99Ms)
	fmt.Fprintf(w, "| through the gateway | %.1f | %.2f | %.2f | %.2f |\n", g.Gateway.RPS, g.Gateway.P50Ms, g.Gateway.P95Ms, g.Gateway.P99Ms)
	fmt.Fprintf(w, "\nAdded by the gateway (medians of the rounds' paired differences): P50 %+.2f ms, P95 %+.2f ms; its requests/s are %.0f%% of the direct path's. The server saw the gateway's key on %d requests and no key on %d (the direct runs', warmup included).\n\n",
		g.AddedP50Ms, g.AddedP95Ms, 100*g.RPSRatio, g.KeyInjected, g.KeyAbsent)
	fmt.Fprintf(w, "Each run:\n\n| round | path | requests/s | P50 (ms) | P95 (ms) | P99 (ms) | ok | errors | connections | load avg start → end |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, rd := range g.Rounds {
		runs := []struct {
			name string
			r    GatewayRun
		}{{"direct", rd.Direct}, {"through the gateway", rd.Gateway}}
		if rd.First == "gateway" {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			l := run.r.Load
			if l == nil {
				continue
			}
			errs := "none"
			if len(l.Errors) > 0 {
				b, _ := json.Marshal(l.Errors)
				errs = mdCell(string(b))
			}
			fmt.Fprintf(w, "| %d | %s | %.1f | %.2f | %.2f | %.2f | %d | %s | %d | %s → %s |\n", i+1, run.name, l.RPS, l.P50Ms, l.P95Ms, l.P99Ms, l.OK, errs, l.Connections, gatewayLoadText(run.r.LoadStart), gatewayLoadText(run.r.LoadEnd))
		}
	}
}

func gatewayLoadText(l []float64) string {
	if len(l) == 0 {
		return "–"
	}
	parts := make([]string, len(l))
	for i, v := range l {
		parts[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}
