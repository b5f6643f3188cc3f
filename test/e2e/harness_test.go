//go:build e2e

// Package e2e proves Paddock end to end against the live local stack that
// TestMain brings up once (`paddock local up --nodes real`) and tears down at
// the end whatever the tests did: a real kube-apiserver, controller-manager,
// scheduler and etcd on loopback, one real node (kubelet, containerd, gVisor's
// runsc) with Cilium as its CNI (NetworkPolicy and CiliumNetworkPolicy are
// enforced, sandboxes run under gVisor), the cluster resolver, and the real
// Agent Sandbox controller run outside the cluster by the local supervisor.
// Nothing is mocked. PADDOCK_E2E_NODES=fake runs the suite on kwok nodes
// instead (no container runs there, so the runtime checks fail or skip).
//
// The suite runs in two lanes at once (lanes_test.go, run-lanes.sh): each is
// its own go test process with its own PADDOCK_HOME and cluster, `node` on
// the real node and `control` on kwok nodes, and within a lane every test runs
// alone. With PADDOCK_E2E_LANE unset, one process runs every test on one
// cluster (with -run, the way to run a single test). README.md says what
// each test holds and why it is in its lane. PADDOCK_E2E_FAIL_AT fails a test
// on purpose at a named point (failOnPurpose); PADDOCK_E2E_KEEP_HOME keeps
// the suite's PADDOCK_HOME for a post-mortem.
//
// Run with `make e2e` (it builds the tools and the binary first) or `make live`.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/gruntwork-io/terratest/modules/shell"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/paths"
)

// env is the live stack shared by the tests of this package.
type env struct {
	bin        string // the paddock binary under test
	home       string // an isolated PADDOCK_HOME (tools and plugins linked from the real one)
	repo       string // repository root
	kubeconfig string
	kube       *kubernetes.Clientset
	dyn        *dynamic.DynamicClient
	meta       metadata.Interface // object metadata only (drift.Labelled)
	kubectl    *k8s.KubectlOptions
	nodes      string // the local cluster's node kind: real or fake
}

var live *env

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain brings the local stack up, runs the tests and always tears it down,
// whatever the tests did.
func runMain(m *testing.M) (code int) {
	e, err := setUp()
	if e != nil {
		defer func() {
			if out, derr := e.paddockRaw("local", "down"); derr != nil {
				fmt.Fprintf(os.Stderr, "e2e: local down failed: %v\n%s\n", derr, out)
				code = 1
			}
			if os.Getenv("PADDOCK_E2E_KEEP_HOME") == "" {
				os.RemoveAll(e.home)
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: setting up the live local stack:", err)
		return 1
	}
	live = e
	return m.Run()
}

// chooseLane checks that every test has a lane and, when this process runs
// one lane, restricts go test to its tests.
func chooseLane(repo string) (lane, error) {
	if err := checkLanes(filepath.Join(repo, "test", "e2e")); err != nil {
		return "", err
	}
	l, err := selectedLane()
	if err != nil || l == "" {
		return l, err
	}
	n, err := restrictToLane(l)
	if err != nil {
		return l, err
	}
	fmt.Fprintf(os.Stderr, "e2e: lane %s: %d tests, one after another, on a cluster of %s nodes\n", l, n, laneNodes(l))
	return l, nil
}

func setUp() (*env, error) {
	e := &env{repo: repoRoot()}
	l, err := chooseLane(e.repo)
	if err != nil {
		return nil, err
	}
	realHome := paths.Home()
	for _, need := range []string{"bin/pulumi", "bin/kube-apiserver", "bin/agent-sandbox-controller", "pulumi/plugins"} {
		if _, err := os.Stat(filepath.Join(realHome, need)); err != nil {
			return nil, fmt.Errorf("%s/%s is missing: run `make tools` first", realHome, need)
		}
	}
	home, err := os.MkdirTemp("", "paddock-e2e-")
	if err != nil {
		return nil, err
	}
	e.home = home
	// Tools and the provider plugin come from the real PADDOCK_HOME; state,
	// passphrase and the local cluster are this run's own.
	for _, d := range []string{"bin", "pulumi"} {
		if err := os.Symlink(filepath.Join(realHome, d), filepath.Join(home, d)); err != nil {
			return e, err
		}
	}
	// terratest's kubectl helpers run `kubectl` from PATH: the pinned build.
	os.Setenv("PATH", filepath.Join(realHome, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	e.bin = os.Getenv("PADDOCK_BIN")
	if e.bin == "" {
		e.bin = filepath.Join(home, "paddock")
		build := exec.Command("go", "build", "-o", e.bin, "./cmd/paddock")
		build.Dir = e.repo
		if out, err := build.CombinedOutput(); err != nil {
			return e, fmt.Errorf("building paddock: %v\n%s", err, out)
		}
	}
	// The node lane runs sandboxes on the real node (kubelet, containerd,
	// gVisor) and fails where the machine cannot run one: `--nodes real`
	// never falls back to kwok. PADDOCK_E2E_NODES=fake runs it on kwok nodes
	// instead, for a machine without root; the runtime checks then fail, as
	// they must. The control lane's cluster is always of kwok nodes.
	nodes := laneNodes(l)
	e.nodes = nodes
	if out, err := e.paddockRaw("local", "up", "--nodes", nodes); err != nil {
		return e, fmt.Errorf("paddock local up: %v\n%s", err, out)
	}
	e.kubeconfig = filepath.Join(home, "local", "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return e, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return e, err
	}
	if e.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return e, err
	}
	if e.meta, err = metadata.NewForConfig(cfg); err != nil {
		return e, err
	}
	e.kubectl = k8s.NewKubectlOptions("", e.kubeconfig, "")
	return e, nil
}

// environ is the environment every paddock run gets: the isolated home.
func (e *env) environ() map[string]string {
	return map[string]string{"PADDOCK_HOME": e.home}
}

// paddockRaw runs the binary outside of any test (set-up, tear-down).
func (e *env) paddockRaw(args ...string) (string, error) {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.repo
	cmd.Env = append(os.Environ(), "PADDOCK_HOME="+e.home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// paddock runs the binary through terratest's shell module and returns its output
// and how long it took.
func (e *env) paddock(t *testing.T, args ...string) (string, time.Duration, error) {
	t.Helper()
	start := time.Now()
	out, err := shell.RunCommandAndGetOutputE(t, shell.Command{
		Command:    e.bin,
		Args:       args,
		WorkingDir: e.repo,
		Env:        e.environ(),
	})
	return out, time.Since(start), err
}

// paddockStdout runs the binary and returns its standard output only (reports
// meant for machines), with stderr still logged by terratest.
func (e *env) paddockStdout(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return shell.RunCommandAndGetStdOutE(t, shell.Command{
		Command:    e.bin,
		Args:       args,
		WorkingDir: e.repo,
		Env:        e.environ(),
	})
}

func (e *env) mustPaddock(t *testing.T, args ...string) (string, time.Duration) {
	t.Helper()
	out, d, err := e.paddock(t, args...)
	if err != nil {
		t.Fatalf("paddock %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out, d
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// failOnPurposeEnv names one point of one test ("TestName@point") at which
// that test fails on purpose: the way to show that a test failing at its
// worst moment (a component killed, a run in flight) still leaves the shared
// cluster as it found it, so the tests after it pass.
const failOnPurposeEnv = "PADDOCK_E2E_FAIL_AT"

// failOnPurpose fails the test here when failOnPurposeEnv names this point.
func failOnPurpose(t *testing.T, point string) {
	t.Helper()
	if os.Getenv(failOnPurposeEnv) == t.Name()+"@"+point {
		t.Fatalf("failed on purpose at %s (%s): the cleanup must restore the cluster for the tests after this one", point, failOnPurposeEnv)
	}
}

// eventually retries check until it returns nil or the timeout passes.
func eventually(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

func ctxTimeout(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return ctx
}
