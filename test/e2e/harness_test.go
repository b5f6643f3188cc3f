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
// Every test runs alone on that one cluster unless PADDOCK_E2E_PARALLEL is a
// number above 1 (the Makefile's E2E_PARALLEL, which also sets go test's
// -parallel): then the tests that call mayRunBeside run beside each other,
// that many at a time, after every other test has finished. Which tests may,
// and why the others may not (most hold the cluster's one Agent Sandbox
// release), is in README.md. PADDOCK_E2E_FAIL_AT fails a test on purpose at a
// named point (failOnPurpose); PADDOCK_E2E_KEEP_HOME keeps the suite's
// PADDOCK_HOME for a post-mortem.
//
// Run with `make e2e` (it builds the tools and the binary first) or `make live`.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/gruntwork-io/terratest/modules/shell"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
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
	if n := parallelism(); n > 1 {
		flag.Parse()
		p := "?"
		if f := flag.Lookup("test.parallel"); f != nil {
			p = f.Value.String()
		}
		fmt.Fprintf(os.Stderr, "e2e: %s=%d: the tests that may run beside each other run after the others, at most %s at once (go test -parallel)\n", parallelEnv, n, p)
	}
	return m.Run()
}

func setUp() (*env, error) {
	e := &env{repo: repoRoot()}
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
	// The suite runs sandboxes on the real node (kubelet, containerd, gVisor)
	// and fails where the machine cannot run one: `--nodes real` never falls
	// back to kwok. PADDOCK_E2E_NODES=fake runs it on kwok nodes instead, for
	// a machine without root; the runtime checks then fail, as they must.
	nodes := os.Getenv("PADDOCK_E2E_NODES")
	if nodes == "" {
		nodes = "real"
	}
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

// parallelEnv turns the parallel phase on: a number above 1 lets the tests
// that call mayRunBeside run beside each other, up to that many at once (go
// test's -parallel, which the Makefile sets to the same number). Unset, 0 or
// 1: every test runs alone, in the order of the files, as when debugging.
const parallelEnv = "PADDOCK_E2E_PARALLEL"

// parallelism is parallelEnv's number; anything but a number above 1 is 1.
func parallelism() int {
	n, err := strconv.Atoi(os.Getenv(parallelEnv))
	if err != nil || n < 2 {
		return 1
	}
	return n
}

// mayRunBeside marks t as a test that shares nothing cluster-wide with the
// other tests that call it (README.md says what each holds): with the
// parallel phase on, go test runs it after every test that runs alone,
// beside the others of its kind. Call it first, before the test touches the
// cluster. A test that holds the Agent Sandbox release or a runtime class,
// kills or restarts a component of the cluster, or sweeps or counts the
// whole cluster in an assertion must not call it.
func mayRunBeside(t *testing.T) {
	t.Helper()
	if parallelism() > 1 {
		t.Parallel()
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
