//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/verify"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

const (
	gatewayNS     = "agents-gw"
	gatewaySecret = "llm-key"
	gatewayPort   = 8443 // the test's TLS destination
	// gatewayTestHost is the destination's name, in a network namespace
	// the test makes (localcluster.StartTestHost) with this index.
	gatewayTestHost      = "tls.gateway.e2e.paddock.test"
	gatewayTestHostIndex = localcluster.MinTestHostIndex
)

// TestEgressGatewayHoldsTheKey: on the real node (gVisor, Cilium) a tenant's
// sandboxes reach a TLS destination only through the tenant's egress
// gateway, which injects a key the sandboxes never hold. The destination is
// the test's own HTTPS server (a CA of the test's own) listening inside a
// network namespace the test makes (a test host), under a name the test has
// the cluster resolver answer. Checked from two warm sandboxes:
// the server receives the gateway's key and never the sandbox's own header;
// the sandbox's environment, files and /proc hold no key; an unlisted host,
// an IP literal, listed names resolving to a private or a cluster address
// and a redirect to another host are refused or returned; the direct route
// around the gateway is refused (the same address answers this machine); a
// sandbox over its request budget gets 429 while the other is served; the
// gateway's audit line names the caller, without query string or key.
func TestEgressGatewayHoldsTheKey(t *testing.T) {
	e := live
	if e.nodes == "fake" {
		t.Skip("kwok nodes run no container and no dataplane (PADDOCK_E2E_NODES=fake)")
	}
	unlisted, private := localcluster.WorldHosts[0], localcluster.WorldHosts[2]
	key := "pdk-e2e-" + randomHex(t, 16)

	// The destination: a network namespace this test makes, a name the
	// cluster resolver answers for it, a TLS server with the test's own CA.
	host, err := localcluster.StartTestHost(gatewayTestHost, gatewayTestHostIndex)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Stop()
	dest := host.WorldHost
	if err := localcluster.NameTestHosts(ctxT(t, 10*time.Second), e.kube, dest); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := localcluster.UnnameTestHosts(ctxTimeout(10*time.Second), e.kube); err != nil {
			t.Errorf("removing the test host's name: %v", err)
		}
	}()
	ca, caPEM := testCA(t)
	srv := startDestination(t, host, ca)
	destAddr := net.JoinHostPort(dest.Addr(), fmt.Sprint(gatewayPort))
	eventually(t, "control: this machine reaches the destination directly", time.Minute, func() error {
		c, err := tls.Dial("tcp", destAddr, &tls.Config{RootCAs: ca.pool, ServerName: dest.Name})
		if err != nil {
			return err
		}
		return c.Close()
	})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(gatewaySpec(dest, private, caPEM)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The key is the team's Secret, not Paddock's: made as soon as up has
	// made the namespace (the gateway's pods wait for it).
	secretMade := make(chan error, 1)
	go func() { secretMade <- createWhenNamespaceExists(e, gatewayNS, gatewaySecret, key, 5*time.Minute) }()
	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{gatewayNS}, dir)
	if err := <-secretMade; err != nil {
		t.Fatal(err)
	}

	// The resolver reads the test host's name when its kubelet next syncs
	// the ConfigMap volume, up to a minute or so after the test wrote it.
	// Asked directly, so that no request spends the sandbox's budget.
	eventually(t, "the cluster resolver answers "+dest.Name, 3*time.Minute, func() error {
		return resolverAnswers(e, dest.Name, dest.Addr())
	})
	pods := runningSandboxPods(t, e, gatewayNS, 2)
	a, b := pods[0], pods[1]
	aIP := podIP(t, e, gatewayNS, a)
	svc, err := e.kube.CoreV1().Services(gatewayNS).Get(ctxT(t, 10*time.Second), manifests.GatewayName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inSandbox := func(pod string, script string) string {
		out, _ := k8s.RunKubectlAndGetOutputE(t, k8s.NewKubectlOptions("", e.kubeconfig, gatewayNS), "exec", pod, "-c", "agent", "--", "sh", "-c", script)
		return out
	}
	// request sends one request through the gateway from a sandbox, the
	// gateway named as its HTTP proxy (absolute-form, as any HTTP client
	// with http_proxy set sends it), and returns what wget showed: the
	// response's header lines (-S) and body.
	request := func(pod, host, path string, extra ...string) string {
		var hdrs string
		for _, h := range extra {
			hdrs += " --header '" + h + "'"
		}
		return inSandbox(pod, fmt.Sprintf("http_proxy=http://%s:%d wget -S -O-%s 'http://%s%s' 2>&1",
			svc.Spec.ClusterIP, model.GatewayListenPort, hdrs, host, path))
	}
	status := func(resp string) string {
		if m := httpStatus.FindStringSubmatch(resp); m != nil {
			return m[1]
		}
		return "no response (" + strings.TrimSpace(tail(resp, 3)) + ")"
	}
	destHost := fmt.Sprintf("%s:%d", dest.Name, gatewayPort)

	t.Run("a listed destination gets the gateway's key, never the sandbox's header", func(t *testing.T) {
		var resp string
		eventually(t, "the gateway serves "+destHost+" for sandbox "+a, 2*time.Minute, func() error {
			resp = request(a, destHost, "/echo?session=s1", "Authorization: Bearer sandbox-own-token")
			if status(resp) != "200" {
				return fmt.Errorf("%s", status(resp))
			}
			return nil
		})
		if !strings.Contains(resp, "destination says hello") {
			t.Errorf("the response is not the destination's:\n%s", resp)
		}
		got := srv.last()
		if got.auth != "Bearer "+key {
			t.Errorf("the destination received Authorization %q, want the gateway's key (Bearer <key>)", redactKey(got.auth, key))
		}
		if strings.Contains(got.headers, "sandbox-own-token") {
			t.Errorf("the sandbox's own Authorization reached the destination: %s", got.headers)
		}
		if strings.Contains(resp, key) {
			t.Errorf("the key came back to the sandbox")
		}
	})

	t.Run("the sandbox holds no key", func(t *testing.T) {
		for _, pod := range []string{a, b} {
			// Every process's environment and command line, and every
			// file a sandbox can write or is given (devices left out: a
			// read of /dev/zero never ends). The key goes into the script
			// in two halves, so that its own command line does not hold it.
			out := inSandbox(pod, "k1="+key[:12]+"; k2="+key[12:]+"; env; "+
				"cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'; "+
				"echo ==files==; grep -rl \"$k1$k2\" /etc /tmp /home /root /var /run /opt /usr /workspace 2>/dev/null; echo done")
			if !strings.Contains(out, "\ndone") {
				t.Fatalf("reading sandbox %s: %s", pod, out)
			}
			// The files grep found are the lines between the two markers
			// (each on a line of its own; the script's own command line,
			// which names them too, is one line).
			lines := strings.Split(out, "\n")
			var files []string
			for i := len(lines) - 1; i >= 0 && strings.TrimSpace(lines[i]) != "==files=="; i-- {
				if l := strings.TrimSpace(lines[i]); l != "" && l != "done" {
					files = append(files, l)
				}
			}
			if strings.Contains(out, key) || len(files) > 0 {
				t.Errorf("sandbox %s holds the key (environment, a command line, or the files %v):\n%s", pod, files, redactKey(out, key))
			}
		}
	})

	t.Run("refused or not followed", func(t *testing.T) {
		for _, c := range []struct {
			what, host, want string
		}{
			{"an unlisted host (" + unlisted.Name + ")", unlisted.Name, "403"},
			{"an IP literal (the destination's own address)", destAddr, "403"},
			{"a listed name resolving to a private address (" + private.Name + ")", private.Name, "403"},
			{"a listed name resolving to a cluster address (kubernetes.default.svc.cluster.local)", "kubernetes.default.svc.cluster.local", "403"},
		} {
			if got := status(request(a, c.host, "/echo")); got != c.want {
				t.Errorf("%s: %s, want %s", c.what, got, c.want)
			} else {
				t.Logf("%s: %s", c.what, got)
			}
		}
		before := srv.count()
		resp := request(a, destHost, "/redirect")
		if status(resp) != "302" || !strings.Contains(resp, "Location: https://"+unlisted.Name+"/collect") {
			t.Errorf("a redirect to another host: want the 302 with its Location returned to the sandbox, got:\n%s", resp)
		}
		if n := srv.count() - before; n != 1 {
			t.Errorf("the destination saw %d requests for one redirect, want 1 (the gateway follows none)", n)
		}
	})

	t.Run("the direct route around the gateway is refused", func(t *testing.T) {
		refusedInARow(t, "sandbox "+a+" to "+destAddr+" directly", func() bool {
			return strings.Contains(inSandbox(a, "nc -w 3 "+dest.Addr()+" "+fmt.Sprint(gatewayPort)+" </dev/null && echo connected"), "connected")
		})
		refusedInARow(t, "sandbox "+a+" to "+destHost+" by name", func() bool {
			return strings.Contains(inSandbox(a, "nc -w 3 "+dest.Name+" "+fmt.Sprint(gatewayPort)+" </dev/null && echo connected"), "connected")
		})
	})

	// verify's own proof (V16), before the budget test spends the sandbox's
	// budget: the spec lists two names the gateway must never dial (a
	// private and a cluster address), so V16 fails naming exactly those two
	// and shows every other part held.
	t.Run("verify V16 proves the route and fails on the two refused destinations", func(t *testing.T) {
		r := e.runPaddock(t, nil, "verify", dir, "--check", "V16", "--format", "json")
		var rep verify.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("verify JSON (exit %d): %v\n%s\n%s", r.code, err, r.stdout, tail(r.stderr, 20))
		}
		res := statusOf(&rep, "V16")
		if len(res) != 1 || len(rep.Results) != 1 {
			t.Fatalf("verify --check V16: %d V16 results of %d, want one alone: %+v", len(res), len(rep.Results), rep.Results)
		}
		got := res[0]
		if got.Status != verify.Fail || r.code != 1 {
			t.Errorf("V16 %s (exit %d), want fail: %s", got.Status, r.code, got.Reason)
		}
		for _, want := range []string{
			private.Name + ":443 is listed, but the gateway answered 403: destination address refused",
			"kubernetes.default.svc.cluster.local:443 is listed, but the gateway answered 403: destination address refused",
			"held: an unlisted host refused by the gateway (403)", "an IP literal refused by the gateway (403)",
			destHost + " answered through the gateway (", "the direct route to " + destHost + " refused",
			"no process environment holds any of the gateway's 1 key(s)",
		} {
			if !strings.Contains(got.Reason, want) {
				t.Errorf("V16 does not say %q:\n%s", want, got.Reason)
			}
		}
		if strings.Contains(got.Reason, key) || strings.Contains(r.stderr, key) {
			t.Error("verify printed the key")
		}
		if strings.Count(got.Reason, "is listed, but") != 2 || strings.Contains(got.Reason, "directly, around the gateway") {
			t.Errorf("V16 names other failures than the two refused destinations:\n%s", got.Reason)
		}
	})

	t.Run("a sandbox over its budget gets 429 while another is served", func(t *testing.T) {
		var codes []string
		for i := 0; i < 3*gatewayRequestsPerMinute; i++ {
			c := status(request(a, destHost, "/echo"))
			codes = append(codes, c)
			if c == "429" {
				break
			}
		}
		if codes[len(codes)-1] != "429" {
			t.Fatalf("sandbox %s was never refused over %d requests a minute: %v", a, gatewayRequestsPerMinute, codes)
		}
		t.Logf("sandbox %s: %v", a, codes)
		if got := status(request(b, destHost, "/echo")); got != "200" {
			t.Errorf("sandbox %s while %s is over its budget: %s, want 200", b, a, got)
		}
	})

	t.Run("the audit line names the caller, without query string or key", func(t *testing.T) {
		logs := gatewayLogs(t, e)
		if strings.Contains(logs, key) {
			t.Fatal("the gateway's log holds the key")
		}
		if strings.Contains(logs, "session=s1") {
			t.Error("the gateway's log holds a query string")
		}
		// auditLine finds the last 200 for /echo from addr (a sandbox's
		// lines from before a claim took it name no claim), and says what
		// it lacks of want (pod, sandbox and claim by name).
		auditLine := func(logs, addr string, want map[string]string) {
			t.Helper()
			lines := strings.Split(logs, "\n")
			slices.Reverse(lines)
			for _, line := range lines {
				var l map[string]any
				if json.Unmarshal([]byte(line), &l) != nil {
					continue
				}
				if l["caller_addr"] == addr && l["destination"] == dest.Name && l["path"] == "/echo" && fmt.Sprint(l["status"]) == "200" {
					for _, f := range []string{"method", "bytes_in", "bytes_out", "duration_ms"} {
						if _, ok := l[f]; !ok {
							t.Errorf("the audit line lacks %s: %s", f, line)
						}
					}
					for f, v := range want {
						if got, ok := l[f].(string); !ok || got != v {
							t.Errorf("the audit line's %s is %v, want %q: %s", f, l[f], v, line)
						}
					}
					t.Logf("audit: %s", line)
					return
				}
			}
			t.Errorf("no audit line for %v (%s) reaching %s /echo with 200:\n%s", want, addr, dest.Name, tail(logs, 20))
		}
		// A warm sandbox: its pod and Sandbox by name (the pod's
		// controller), no claim.
		pa, err := e.kube.CoreV1().Pods(gatewayNS).Get(ctxT(t, 10*time.Second), a, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner := metav1.GetControllerOf(pa)
		if owner == nil || owner.Kind != "Sandbox" {
			t.Fatalf("pod %s has no Sandbox controller: %v", a, pa.OwnerReferences)
		}
		auditLine(logs, aIP, map[string]string{"pod": a, "sandbox": owner.Name, "claim": ""})

		// A claimed one: a claim takes a warm sandbox, whose next request
		// the audit line names with the claim.
		const claimName = "gw-session"
		claims := e.dyn.Resource(claimsGVR).Namespace(gatewayNS)
		claim := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": claimsGVR.GroupVersion().String(), "kind": "SandboxClaim",
			"metadata": map[string]any{"name": claimName, "namespace": gatewayNS},
			"spec":     map[string]any{"warmPoolRef": map[string]any{"name": "agent"}, "lifecycle": sessionLifecycle(time.Now().Add(time.Hour))},
		}}
		if _, err := claims.Create(ctxT(t, 10*time.Second), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var bound, pod, podIPAddr string
		eventually(t, "the claim takes a warm sandbox, its pod running", 2*time.Minute, func() error {
			u, err := claims.Get(ctxT(t, 5*time.Second), claimName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if bound, _, _ = unstructured.NestedString(u.Object, "status", "sandbox", "name"); bound == "" {
				return fmt.Errorf("not bound yet")
			}
			pods, err := e.kube.CoreV1().Pods(gatewayNS).List(ctxT(t, 10*time.Second), metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if o := metav1.GetControllerOf(&p); o != nil && o.Kind == "Sandbox" && o.Name == bound && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
					pod, podIPAddr = p.Name, p.Status.PodIP
					return nil
				}
			}
			return fmt.Errorf("sandbox %s has no running pod", bound)
		})
		// The sandbox may be the one the budget test spent: its budget
		// refills within a minute.
		eventually(t, "claimed sandbox "+bound+" served through the gateway", 2*time.Minute, func() error {
			if got := status(request(pod, destHost, "/echo")); got != "200" {
				return fmt.Errorf("%s", got)
			}
			return nil
		})
		auditLine(gatewayLogs(t, e), podIPAddr, map[string]string{"pod": pod, "sandbox": bound, "claim": claimName})
	})
	e.driftReport(t, 0, nil, dir)
}

// httpStatus finds the first status line wget -S printed.
var httpStatus = regexp.MustCompile(`HTTP/1\.[01] (\d{3})`)

// gatewayRequestsPerMinute is the spec's budget per sandbox: low, so the
// budget test runs out of it in a few requests.
const gatewayRequestsPerMinute = 24

// gatewaySpec is the local platform's header (specgen's, no tenants of its
// own) and one tenant with two warm sandboxes behind an egress gateway.
func gatewaySpec(dest, private localcluster.WorldHost, caPEM string) string {
	return specgen.Generate(specgen.Options{Platform: "egress-gateway"}) + fmt.Sprintf(`
tenant "gw" {
%s
  egress_gateway {
    allow_cidrs = ["10.215.%d.0/30"]
    ca_bundle   = <<-EOT
%s
    EOT

    destination %q {
      port = %d
      credential {
        secret = %q
      }
    }
    destination %q {}
    destination "kubernetes.default.svc.cluster.local" {}

    budgets {
      requests_per_minute = %d
    }
  }
}
`, sleeperTemplate(2), dest.Index, strings.TrimSpace(caPEM), dest.Name, gatewayPort, gatewaySecret, private.Name, gatewayRequestsPerMinute)
}

// resolverAnswers asks the cluster resolver's pod (the stack's) for name
// and says whether it answers addr.
func resolverAnswers(e *env, name, addr string) error {
	pod, err := e.kube.CoreV1().Pods(localcluster.DNSNamespace).Get(ctxTimeout(5*time.Second), localcluster.DNSPodName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pod.Status.PodIP == "" {
		return fmt.Errorf("the resolver pod has no address yet")
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(pod.Status.PodIP, "53"))
	}}
	got, err := r.LookupHost(ctxTimeout(3*time.Second), name)
	if err != nil {
		return err
	}
	if !slices.Contains(got, addr) {
		return fmt.Errorf("%s resolves to %v, want %s", name, got, addr)
	}
	return nil
}

// createWhenNamespaceExists makes the key's Secret once ns exists.
func createWhenNamespaceExists(e *env, ns, name, key string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{}); err == nil {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{model.DefaultGatewayCredentialKey: key}}
			_, err := e.kube.CoreV1().Secrets(ns).Create(ctxTimeout(10*time.Second), s, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return nil
			}
			return fmt.Errorf("creating Secret %s/%s: %v", ns, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("namespace %s did not appear within %s", ns, within)
}

// runningSandboxPods waits for n running sandbox pods of ns, by name.
func runningSandboxPods(t *testing.T, e *env, ns string, n int) []string {
	t.Helper()
	var names []string
	eventually(t, fmt.Sprintf("%d running sandboxes in %s", n, ns), 3*time.Minute, func() error {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctxT(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			return err
		}
		names = nil
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Status.PodIP != "" && len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Name == "agent" {
				names = append(names, p.Name)
			}
		}
		if len(names) < n {
			return fmt.Errorf("%d of %d pods are running sandboxes", len(names), len(pods.Items))
		}
		return nil
	})
	sort.Strings(names)
	return names[:n]
}

// gatewayLogs is what the gateway's pods wrote.
func gatewayLogs(t *testing.T, e *env) string {
	t.Helper()
	sel := labels.SelectorFromSet(manifests.GatewayPodLabels()).String()
	pods, err := e.kube.CoreV1().Pods(gatewayNS).List(ctxT(t, 10*time.Second), metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the gateway's pods (%s): %d, %v", sel, len(pods.Items), err)
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := e.kube.CoreV1().Pods(gatewayNS).GetLogs(p.Name, &corev1.PodLogOptions{}).Do(ctxT(t, 20*time.Second)).Raw()
		if err != nil {
			t.Fatalf("logs of %s: %v", p.Name, err)
		}
		b.Write(raw)
	}
	return b.String()
}

// destination is the test's HTTPS server inside its test host's namespace.
type destination struct {
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct{ auth, headers string }

func (d *destination) last() seenRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) == 0 {
		return seenRequest{}
	}
	return d.seen[len(d.seen)-1]
}

func (d *destination) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// startDestination serves HTTPS for h.Name on gatewayPort inside the test
// host's network namespace: /echo answers, /redirect sends the caller to a
// world host.
func startDestination(t *testing.T, h *localcluster.TestHost, ca *testAuthority) *destination {
	t.Helper()
	l, err := localcluster.ListenInNetns(h.PID(), net.JoinHostPort(h.Addr(), fmt.Sprint(gatewayPort)))
	if err != nil {
		t.Fatal(err)
	}
	d := &destination{}
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		var hs []string
		for k, v := range r.Header {
			hs = append(hs, k+": "+strings.Join(v, ","))
		}
		d.mu.Lock()
		d.seen = append(d.seen, seenRequest{auth: r.Header.Get("Authorization"), headers: strings.Join(hs, "; ")})
		d.mu.Unlock()
	}
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		fmt.Fprintln(w, "destination says hello")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		http.Redirect(w, r, "https://"+localcluster.WorldHosts[0].Name+"/collect", http.StatusFound)
	})
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.issue(t, h.Name)}, MinVersion: tls.VersionTLS12}}
	go func() { _ = s.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = s.Close() })
	return d
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// redactKey keeps a failure message from printing the key it compares.
func redactKey(s, key string) string { return strings.ReplaceAll(s, key, "<key>") }
