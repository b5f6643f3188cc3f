package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extensionsv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/hangguard"
	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

const testNS = "agents-team-a"

// fakeCluster holds one claimed sandbox whose pod is at 127.0.0.1, where
// the test's requests come from.
func fakeCluster(t *testing.T) (kubernetes.Interface, dynamic.Interface, error) {
	t.Helper()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sb-1", Namespace: testNS, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: sandboxv1beta1.SandboxKind, Name: "sb-1", UID: "uid-sb-1", Controller: &yes,
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
	}
	sb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": agentsandbox.Sandboxes.GroupVersion().String(), "kind": sandboxv1beta1.SandboxKind}}
	sb.SetName("sb-1")
	sb.SetNamespace(testNS)
	sb.SetUID("uid-sb-1")
	sb.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: extensionsv1beta1.GroupVersion.String(), Kind: extensionsv1beta1.SandboxClaimKind, Name: "session-1", UID: "uid-session-1", Controller: &yes,
	}})
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{agentsandbox.Sandboxes: "SandboxList"})
	if _, err := dyn.Resource(agentsandbox.Sandboxes).Namespace(testNS).Create(context.Background(), sb, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	return fake.NewClientset(pod), dyn, nil
}

// A gateway whose informers cannot sync says why and exits, without serving.
func TestSyncTimeout(t *testing.T) {
	p := writeConfig(t, "127.0.0.1:0")
	conn := func(string) (kubernetes.Interface, dynamic.Interface, error) {
		kube, dyn, err := fakeCluster(t)
		kube.(*fake.Clientset).PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, fmt.Errorf("pods is forbidden")
		})
		return kube, dyn, err
	}
	var out, errb syncBuffer
	code := hangguard.Within(t, 30*time.Second, "sync timeout", func() int {
		return serve(context.Background(), []string{"-config", p, "-namespace", testNS, "-sync-timeout", "300ms"}, &out, &errb, conn)
	})
	if code != 1 || !strings.Contains(errb.String(), "list and watch [pods] in namespace "+testNS) || strings.Contains(out.String(), `"msg":"serving"`) {
		t.Errorf("exit %d\nstderr: %s\nstdout: %s", code, errb.String(), out.String())
	}
	// Outside a pod, and without -namespace, there is no namespace to serve.
	if _, err := os.Stat(serviceAccountNamespace); err == nil {
		return // the test itself runs in a pod
	}
	if code := serve(context.Background(), []string{"-config", p}, &out, &errb, conn); code != 2 {
		t.Errorf("no namespace: exit %d, want 2", code)
	}
}

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

func writeConfig(t *testing.T, listen string) string {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("sk-cmd-test-key-0000\n"), 0o600)
	cfg := fmt.Sprintf(`{"listen": %q, "destinations": [{"host": "api.test", "credential": {"header": "x-api-key", "keyFile": %q}}]}`, listen, key)
	p := filepath.Join(dir, "gateway.json")
	os.WriteFile(p, []byte(cfg), 0o600)
	return p
}

func TestCheck(t *testing.T) {
	var out, errb bytes.Buffer
	p := writeConfig(t, ":8080")
	if code := run(context.Background(), []string{"-config", p, "-check"}, &out, &errb); code != 0 {
		t.Fatalf("-check: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "1 destinations") {
		t.Errorf("-check said %q", out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"listen": ":1", "destinations": [{"host": "10.0.0.1"}], "extra": true}`), 0o600)
	errb.Reset()
	if code := run(context.Background(), []string{"-config", bad, "-check"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), `unknown field "extra"`) {
		t.Errorf("a bad configuration: exit %d, %q", code, errb.String())
	}
	if code := run(context.Background(), nil, &out, &errb); code != 2 {
		t.Errorf("no -config: exit %d, want 2", code)
	}
}

// The binary serves the configuration and stops cleanly when told. Only an
// unlisted host is asked for: nothing leaves loopback.
func TestServeAndShutdown(t *testing.T) {
	ports, err := loopbackport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p := writeConfig(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	code := make(chan int, 1)
	conn := func(string) (kubernetes.Interface, dynamic.Interface, error) { return fakeCluster(t) }
	go func() { code <- serve(ctx, []string{"-config", p, "-namespace", testNS}, &out, &errb, conn) }()

	var res *http.Response
	for range 200 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Host = "elsewhere.test"
		if res, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the gateway never answered: %v; stderr %s", err, errb.String())
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("unlisted host: %d %q, want 403", res.StatusCode, body)
	}
	cancel()
	if c := hangguard.Within(t, 30*time.Second, "shutdown", func() int { return <-code }); c != 0 {
		t.Errorf("exit %d after shutdown: %s", c, errb.String())
	}
	if !strings.Contains(out.String(), `"msg":"request"`) || !strings.Contains(out.String(), `"status":403`) {
		t.Errorf("no audit line for the request:\n%s", out.String())
	}
	// The request came from 127.0.0.1, the fake cluster's sandbox pod: the
	// audit line names it, and the refusal is the host's, not the caller's.
	for _, want := range []string{`"sandbox":"sb-1"`, `"claim":"session-1"`, `"pod":"sb-1"`, `not a destination`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the audit line lacks %s:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String()+errb.String(), "sk-cmd-test-key") {
		t.Errorf("the key was printed")
	}
}
