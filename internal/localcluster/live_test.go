package localcluster_test

import (
	"github.com/paddock-platform/paddock/internal/procfs"

	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/localcluster"
)

// superviseArg makes this test binary act as the supervisor `paddock local
// supervise` would be: the live test points Options.SupervisorCommand at it.
const superviseArg = "localcluster-supervise"

func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == superviseArg {
		dir := ""
		for i, a := range os.Args {
			if a == "--dir" && i+1 < len(os.Args) {
				dir = os.Args[i+1]
			}
		}
		if err := localcluster.Supervise(context.Background(), dir); err != nil {
			fmt.Fprintln(os.Stderr, "supervise:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLiveLocalCluster runs the whole lifecycle against the real binaries of
// `make tools`, in its own directory and under its own name, so it never touches a
// user's cluster.
func TestLiveLocalCluster(t *testing.T) {
	if os.Getenv("PADDOCK_LIVE") != "1" {
		t.Skip("live local stack not requested; set PADDOCK_LIVE=1 (make e2e does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "local")
	name := fmt.Sprintf("live-%d", os.Getpid())
	out := &lineLogger{t: t}
	c := localcluster.New(localcluster.Options{
		Name:              name,
		Dir:               dir,
		Out:               out,
		SupervisorCommand: []string{exe, superviseArg},
		Nodes:             localcluster.NodesFake, // the kwok lifecycle; live_real_test.go runs the real node
	})
	var seenPIDs []int // every process the cluster ran; none may survive Down
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("cleanup Down: %v", err)
		}
	})

	// --- Up, cold.
	start := time.Now()
	info, err := c.Up(ctx)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("TIMING Up (cold): %s", time.Since(start))
	if info.Name != name || info.Dir != dir || info.Kubeconfig != filepath.Join(dir, "kubeconfig") ||
		info.Context != "paddock-"+name || info.LogsDir != filepath.Join(dir, "logs") {
		t.Errorf("info %+v", info)
	}
	cs, dc := clients(t, info.Kubeconfig)

	// --- The fake gVisor node.
	node, err := cs.CoreV1().Nodes().Get(ctx, name+"-gvisor-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	for k, v := range map[string]string{
		"sandbox.gke.io/runtime": "gvisor", "kubernetes.io/os": "linux", "kubernetes.io/hostname": node.Name,
		"app.kubernetes.io/managed-by": "paddock",
	} {
		if node.Labels[k] != v {
			t.Errorf("node label %s=%q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Annotations["kwok.x-k8s.io/node"] != "fake" {
		t.Error("node is not a kwok fake node")
	}
	wantTaint := corev1.Taint{Key: "sandbox.gke.io/runtime", Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != wantTaint.Key || node.Spec.Taints[0].Value != wantTaint.Value || node.Spec.Taints[0].Effect != wantTaint.Effect {
		t.Errorf("node taints %v, want [%v]", node.Spec.Taints, wantTaint)
	}
	for res, want := range map[corev1.ResourceName]string{"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "500Gi"} {
		if q := node.Status.Allocatable[res]; q.String() != want {
			t.Errorf("node allocatable %s = %s, want %s", res, q.String(), want)
		}
	}
	if !isReady(node) {
		t.Error("node not Ready")
	}

	// --- Up again: harmless, same answer.
	start = time.Now()
	info2, err := c.Up(ctx)
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	t.Logf("TIMING Up (already up): %s", time.Since(start))
	if *info2 != *info {
		t.Errorf("second Up returned %+v, want %+v", info2, info)
	}

	// --- Status before `paddock up`: healthy, controller waiting for the CRDs.
	st := status(t, c)
	if !st.Healthy() {
		t.Fatalf("status after Up not healthy: %v", st.Problems())
	}
	if got := component(t, st, "agent-sandbox-controller"); got.State != localcluster.Waiting {
		t.Errorf("controller before CRDs: %+v, want %s", got, localcluster.Waiting)
	}
	for _, comp := range st.Components {
		if comp.PID != 0 {
			seenPIDs = append(seenPIDs, comp.PID)
		}
	}

	// --- Install the Agent Sandbox CRDs from the pinned module: the controller starts.
	applyCRDs(ctx, t, dc)
	ctl := waitComponent(t, c, "agent-sandbox-controller", 3*time.Minute, func(cs localcluster.ComponentStatus) bool {
		return cs.State == localcluster.Running
	})
	t.Logf("controller healthy: pid %d, %s", ctl.PID, ctl.Detail)
	seenPIDs = append(seenPIDs, ctl.PID)

	// --- Kill the controller: Status reports it crashed, the supervisor restarts it.
	if err := syscall.Kill(ctl.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	crashed := waitComponent(t, c, "agent-sandbox-controller", 10*time.Second, func(cs localcluster.ComponentStatus) bool {
		return cs.State == localcluster.Crashed
	})
	t.Logf("after kill -9: %s %s", crashed.State, crashed.Detail)
	if s := status(t, c); s.Healthy() && component(t, s, "agent-sandbox-controller").State == localcluster.Crashed {
		t.Error("Healthy() with a crashed controller")
	}
	restarted := waitComponent(t, c, "agent-sandbox-controller", 2*time.Minute, func(cs localcluster.ComponentStatus) bool {
		return cs.State == localcluster.Running && cs.PID != ctl.PID
	})
	t.Logf("restarted: pid %d, %s", restarted.PID, restarted.Detail)
	seenPIDs = append(seenPIDs, restarted.PID)

	// --- Kill the API server: Status reports it crashed; Up repairs it.
	api := component(t, status(t, c), "kube-apiserver")
	if err := syscall.Kill(api.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone := waitComponent(t, c, "kube-apiserver", 10*time.Second, func(cs localcluster.ComponentStatus) bool {
		return cs.State == localcluster.Crashed
	})
	t.Logf("after kill -9: kube-apiserver %s (%s)", gone.State, gone.Detail)
	if s := status(t, c); s.Healthy() {
		t.Error("Healthy() with a crashed API server")
	}
	start = time.Now()
	if _, err := c.Up(ctx); err != nil {
		t.Fatalf("Up (repair): %v", err)
	}
	t.Logf("TIMING Up (repair after kill -9 kube-apiserver): %s", time.Since(start))
	repaired := status(t, c)
	if !repaired.Healthy() {
		t.Errorf("after repair: %v", repaired.Problems())
	}
	for _, comp := range repaired.Components {
		if comp.PID != 0 {
			seenPIDs = append(seenPIDs, comp.PID)
		}
	}

	// --- Down: no process, no directory; Down again is fine.
	start = time.Now()
	if err := c.Down(ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("TIMING Down: %s", time.Since(start))
	for _, pid := range seenPIDs {
		if alive(pid) {
			t.Errorf("pid %d still runs after Down", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Down (%v)", dir, err)
	}
	if err := c.Down(ctx); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if s := status(t, c); s.Exists || s.Healthy() {
		t.Errorf("status after Down: %+v", s)
	}
}

func clients(t *testing.T, kubeconfig string) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dc
}

func status(t *testing.T, c localcluster.Cluster) *localcluster.Status {
	t.Helper()
	s, err := c.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return s
}

func component(t *testing.T, s *localcluster.Status, name string) localcluster.ComponentStatus {
	t.Helper()
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %q in %+v", name, s.Components)
	return localcluster.ComponentStatus{}
}

// waitComponent polls Status until cond holds for the named component.
func waitComponent(t *testing.T, c localcluster.Cluster, name string, d time.Duration, cond func(localcluster.ComponentStatus) bool) localcluster.ComponentStatus {
	t.Helper()
	deadline := time.Now().Add(d)
	var last localcluster.ComponentStatus
	for {
		last = component(t, status(t, c), name)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %s: %s (%s); log %s:\n%s", name, d, last.State, last.Detail, last.Log, tail(last.Log))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs creates the four CRDs from the pinned agent-sandbox module.
func applyCRDs(ctx context.Context, t *testing.T, dc dynamic.Interface) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/agent-sandbox")
	modDir, err := cmd.Output()
	if err != nil {
		t.Fatalf("locate the agent-sandbox module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(modDir)), "k8s", "crds", "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("CRD files %v (%v)", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := dc.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", u.GetName(), err)
		}
	}
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// alive: the pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := procfs.ReadStat(pid)
	return err == nil && st.State != 'Z'
}

// lineLogger sends complete progress lines to t.Log.
type lineLogger struct {
	t   *testing.T
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.Reset()
			l.buf.WriteString(line)
			return len(p), nil
		}
		l.t.Log("progress: " + strings.TrimRight(line, "\n"))
	}
}
