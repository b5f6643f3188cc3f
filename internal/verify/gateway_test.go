package verify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const (
	gwTestKey    = "sk-verify-test-0123456789abcdef"
	gwTestSecret = "llm-key"
)

// gatewayPlatform is examples/local with an egress gateway for one
// destination whose key is in Secret llm-key.
func gatewayPlatform(t *testing.T) *model.Platform {
	p := localPlatform(t)
	gw := model.DefaultEgressGateway()
	gw.Destinations = []model.GatewayDestination{{
		Host: "api.llm.example", Port: 443,
		Credential: &model.GatewayCredential{Secret: gwTestSecret, Key: "key", Header: "Authorization", Format: "Bearer {{key}}"},
	}}
	p.Tenants[0].EgressGateway = &gw
	return p
}

// fakeSandboxTools are stand-ins for a sandbox image's nc (or curl) that
// answer as a working gateway and fence do; each case bends one.
type fakeSandboxTools struct {
	unlisted, literal, listed string // the gateway's answer to each request
	directExit                string // nc's exit status going around the gateway
	curl                      bool   // the image has curl (and no nc)
	noTools                   bool   // neither curl nor nc
	crash                     bool   // the client dies of SIGSEGV, as busybox wget did given -T and a proxy
}

func workingGateway() fakeSandboxTools {
	refused := func(why string) string {
		return "HTTP/1.1 403 Forbidden\r\n" + gateway.RefusalHeader + ": " + why + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\npaddock gateway: " + why + "\n"
	}
	return fakeSandboxTools{
		unlisted:   refused(`host "paddock-verify-unlisted.invalid" is not a destination of this gateway`),
		literal:    refused("IP literal refused: name a destination by its host name"),
		listed:     "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n\r\n{}\n",
		directExit: "1",
	}
}

// run executes V16's script with sh, the fake tools first on PATH: the
// script's own syntax, quoting and markers are what is tested.
func (f fakeSandboxTools) run(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The gateway's answer to a request for the URL in $1, or nothing.
	const answer = `case "$1" in
*paddock-verify-unlisted.invalid*) printf '%s' "$UNLISTED";;
*192.0.2.1*) printf '%s' "$LITERAL";;
*api.llm.example:443*) printf '%s' "$LISTED";;
*) echo "unexpected request $1"; exit 1;;
esac
`
	switch {
	case f.noTools:
	case f.crash:
		write("nc", `[ "$3" = 10.96.0.80 ] && kill -SEGV $$; exit $DIRECT_EXIT`)
	case f.curl:
		// curl -sS -D - -o /dev/null --max-time 20 -x PROXY URL
		// curl -sS -D - -o /dev/null --max-time 20 -x PROXY URL through the
		// gateway; curl ... --noproxy * https://HOST:PORT/ around it.
		write("curl", `case "$*" in *--noproxy*) exit $DIRECT_EXIT;; esac
[ "$8" = -x ] && [ "$9" = http://10.96.0.80:8080 ] || { echo "curl $*: not through the gateway's address"; exit 2; }
set -- "${10}"
`+answer)
	default:
		// nc -w N HOST PORT: to the gateway's address the request comes on
		// standard input; anywhere else it is the direct route.
		write("nc", `if [ "$3:$4" = 10.96.0.80:8080 ]; then read -r method url proto; set -- "$url"
`+answer+`exit 0; fi
exit $DIRECT_EXIT
`)
	}
	// The script keeps nc's input open a few seconds for the answer; the
	// fakes answer at once, so sleep need not.
	write("sleep", "exit 0\n")
	// Only the fakes and the shell's own tools (cat, tr) are on PATH: a
	// machine's real curl or nc must never answer for the fakes.
	bin := t.TempDir()
	for _, tool := range []string{"cat", "tr"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not on this machine", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + dir + ":" + bin, "UNLISTED=" + f.unlisted, "LITERAL=" + f.literal, "LISTED=" + f.listed, "DIRECT_EXIT=" + f.directExit}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, out)
	}
	return string(out)
}

// shellExec runs V16's script with the fake tools instead of in a pod; the
// process environments it reads are this machine's, so environ can replace
// them with a sandbox's own.
type shellExec struct {
	t       *testing.T
	tools   fakeSandboxTools
	environ *string
	pod     string
}

func (s *shellExec) Exec(_ context.Context, _, pod, _ string, cmd []string) (string, string, error) {
	s.pod = pod
	out := s.tools.run(s.t, cmd[len(cmd)-1])
	if s.environ != nil {
		begin, end := gatewayMarker+"begin environ\n", gatewayMarker+"exit"
		i := strings.Index(out, begin)
		j := strings.LastIndex(out, end)
		if i < 0 || j < i {
			s.t.Fatalf("no environ probe in %q", out)
		}
		out = out[:i+len(begin)] + *s.environ + out[j:]
	}
	return out, "", nil
}

func gatewayVerifier(t *testing.T, p *model.Platform, pod *corev1.Pod, withSecret bool) *Verifier {
	t.Helper()
	ns := p.Tenants[0].Namespace
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
		"metadata": map[string]any{"name": pod.Name, "namespace": ns,
			"ownerReferences": []any{map[string]any{"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool", "name": p.Tenants[0].WarmPools[0].Name, "uid": "u", "controller": true}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: manifests.GatewayName, Namespace: ns}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.80"}}
	objs := []runtime.Object{pod, node("real-0", false), svc}
	if withSecret {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gwTestSecret, Namespace: ns}, Data: map[string][]byte{"key": []byte(gwTestKey + "\n")}})
	}
	v, _, _ := fakeVerifier(t, p, objs, sb)
	v.opts.NoProbes = false
	return v
}

func gatewayVantagePod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-gw001", Namespace: ns},
		Spec:   corev1.PodSpec{NodeName: "real-0", Containers: []corev1.Container{{Name: "agent"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

// V16 passes only when every part holds, and fails naming the part that
// does not: each case breaks one control and nothing else.
func TestV16GatewayProvenFromASandbox(t *testing.T) {
	p := gatewayPlatform(t)
	ns := p.Tenants[0].Namespace
	leaked := "PATH=/bin\nHOME=/\nLLM_KEY=" + gwTestKey + "\n"
	clean := "PATH=/bin\nHOME=/\n"
	for _, c := range []struct {
		name    string
		bend    func(*fakeSandboxTools)
		pod     func(*corev1.Pod)
		environ *string
		secret  bool
		want    Status
		words   []string
	}{
		{name: "a working gateway", secret: true, environ: &clean, want: Pass, words: []string{
			"from sandbox agent-gw001", "an unlisted host refused by the gateway (403)", "an IP literal refused by the gateway (403)",
			"api.llm.example:443 answered through the gateway (401)", "the direct route to api.llm.example:443 refused",
			"no process environment holds any of the gateway's 1 key(s)"}},
		{name: "an unlisted host relayed", secret: true, environ: &clean, want: Fail,
			bend:  func(f *fakeSandboxTools) { f.unlisted = "HTTP/1.1 200 OK\r\n\r\n" },
			words: []string{"an unlisted host was answered (200), not refused by the gateway"}},
		{name: "an IP literal relayed", secret: true, environ: &clean, want: Fail,
			bend:  func(f *fakeSandboxTools) { f.literal = "HTTP/1.1 404 Not Found\r\n\r\n" },
			words: []string{"an IP literal was answered (404)"}},
		{name: "the listed destination refused by the gateway", secret: true, environ: &clean, want: Fail,
			bend: func(f *fakeSandboxTools) {
				f.listed = "  HTTP/1.1 502 Bad Gateway\n  " + gateway.RefusalHeader + ": destination certificate not trusted\n"
			},
			words: []string{"api.llm.example:443 is listed, but the gateway answered 502: destination certificate not trusted"}},
		{name: "no gateway answering", secret: true, environ: &clean, want: Fail,
			bend: func(f *fakeSandboxTools) {
				f.unlisted = "nc: can't connect to remote host (10.96.0.80): Connection refused\n"
			},
			words: []string{"an unlisted host: no answer from the gateway at http://10.96.0.80:8080", "Connection refused"}},
		{name: "the direct route open", secret: true, environ: &clean, want: Fail,
			bend:  func(f *fakeSandboxTools) { f.directExit = "0" },
			words: []string{"connected to api.llm.example:443 directly, around the gateway", "held: an unlisted host refused by the gateway (403)"}},
		{name: "the key in a process environment", secret: true, environ: &leaked, want: Fail,
			words: []string{"a process environment in sandbox agent-gw001 holds the key of Secret llm-key key key (api.llm.example)"}},
		{name: "the key's Secret in the pod spec", secret: true, environ: &clean, want: Fail,
			pod: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: gwTestSecret}}}}}}}}
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: gwTestSecret}, Key: "key"}}}}
			},
			words: []string{"reads the gateway's credential Secret through env TOKEN of container agent, projected volume creds"}},
		{name: "curl instead of nc", secret: true, environ: &clean, want: Pass,
			bend:  func(f *fakeSandboxTools) { f.curl, f.directExit = true, "7" },
			words: []string{"an unlisted host refused by the gateway (403)", "api.llm.example:443 answered through the gateway (401)", "the direct route to api.llm.example:443 refused"}},
		{name: "curl connecting around the gateway", secret: true, environ: &clean, want: Fail,
			bend:  func(f *fakeSandboxTools) { f.curl, f.directExit = true, "35" },
			words: []string{"connected to api.llm.example:443 directly, around the gateway"}},
		{name: "neither curl nor nc in the image", secret: true, environ: &clean, want: NotVerifiable,
			bend:  func(f *fakeSandboxTools) { f.noTools = true },
			words: []string{"an unlisted host through the gateway (neither curl nor nc in the image)", "the direct route to api.llm.example:443 (neither nc nor curl in the image)"}},
		{name: "the HTTP client crashing", secret: true, environ: &clean, want: NotVerifiable,
			bend:  func(f *fakeSandboxTools) { f.crash = true },
			words: []string{"an unlisted host through the gateway (the HTTP client ended by signal 11", "the direct route to api.llm.example:443 refused"}},
		{name: "the key's Secret unreadable", secret: false, environ: &clean, want: NotVerifiable,
			words: []string{"whether the sandbox holds the key of Secret llm-key key key (api.llm.example)", "not found"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tools := workingGateway()
			if c.bend != nil {
				c.bend(&tools)
			}
			pod := gatewayVantagePod(ns)
			if c.pod != nil {
				c.pod(pod)
			}
			v := gatewayVerifier(t, p, pod, c.secret)
			ex := &shellExec{t: t, tools: tools, environ: c.environ}
			v.exec = ex
			res := only(t, v, "V16")
			wantStatus(t, res, c.want, c.words...)
			if ex.pod != pod.Name {
				t.Errorf("looked from %q, want the ready sandbox %s", ex.pod, pod.Name)
			}
			for _, r := range res {
				if strings.Contains(r.Reason, gwTestKey) {
					t.Errorf("the key appears in the result: %s", r.Reason)
				}
			}
		})
	}
}

// The script reads the real process environments it can: on this machine
// they hold no test key, and the probe's own output parses.
func TestV16ScriptReadsProcessEnvironments(t *testing.T) {
	p := gatewayPlatform(t)
	v := gatewayVerifier(t, p, gatewayVantagePod(p.Tenants[0].Namespace), true)
	v.exec = &shellExec{t: t, tools: workingGateway()}
	wantStatus(t, only(t, v, "V16"), Pass, "no process environment holds any of the gateway's 1 key(s)")
}

func TestV16WhereNothingCanBeShown(t *testing.T) {
	p := gatewayPlatform(t)
	ns := p.Tenants[0].Namespace

	v := gatewayVerifier(t, p, gatewayVantagePod(ns), true)
	v.opts.NoProbes = true
	wantStatus(t, only(t, v, "V16"), NotVerifiable, "--no-probes")

	pod := gatewayVantagePod(ns)
	pod.Spec.NodeName = "kwok-0"
	v, _, _ = fakeVerifier(t, p, []runtime.Object{pod, node("kwok-0", true)})
	v.opts.NoProbes = false
	wantStatus(t, only(t, v, "V16"), NotVerifiable, "no warm pool has a ready sandbox")

	v = gatewayVerifier(t, p, gatewayVantagePod(ns), true)
	if err := v.kube.CoreV1().Services(ns).Delete(context.Background(), manifests.GatewayName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	v.exec = &shellExec{t: t, tools: workingGateway()}
	wantStatus(t, only(t, v, "V16"), Fail, "the gateway's Service", "not found")

	v = gatewayVerifier(t, p, gatewayVantagePod(ns), true)
	v.exec = failingExec{}
	wantStatus(t, only(t, v, "V16"), NotVerifiable, "exec into sandbox agent-gw001")

	// A tenant without a gateway has no V16 result.
	if res := only(t, gatewayVerifier(t, localPlatform(t), gatewayVantagePod(ns), false), "V16"); len(res) != 0 {
		t.Errorf("V16 judged a tenant without a gateway: %+v", res)
	}
}

type failingExec struct{}

func (failingExec) Exec(context.Context, string, string, string, []string) (string, string, error) {
	return "", "container not found", errors.New("exec refused")
}

// Only runs the named checks, and an unknown ID is refused by name.
func TestOnlyRunsTheNamedChecks(t *testing.T) {
	v, _, _ := fakeVerifier(t, localPlatform(t), nil)
	v.opts.Only = []string{"V05"}
	rep := v.Run(context.Background())
	if len(rep.Results) == 0 {
		t.Fatal("no result")
	}
	for _, r := range rep.Results {
		if r.ID != "V05" {
			t.Errorf("check %s ran, only V05 asked", r.ID)
		}
	}
	if _, err := New(localPlatform(t), nil, Options{Only: []string{"V99"}}); err == nil || !strings.Contains(err.Error(), `no check "V99"`) || !strings.Contains(err.Error(), "V16") {
		t.Errorf("unknown check: %v", err)
	}
}
