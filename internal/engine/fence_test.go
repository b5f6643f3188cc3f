package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/internal/state"
)

// These are the fence's tests (fence.go, issue 35 item 3): Engine.Up runs
// the pinned Pulumi CLI for real, with a program that holds no cluster
// object (no cluster runs here), on file://, postgres:// (a real
// PostgreSQL) and s3:// (SeaweedFS).

// engineHome is a PADDOCK_HOME of the test's own linking to the pinned
// tools and the kubernetes plugin, as Engine.Up needs them. Its state,
// secrets and journals on the runner stay its own.
func engineHome(t *testing.T) string {
	t.Helper()
	cli := pulumiCLI(t)
	installed := filepath.Dir(filepath.Dir(cli))
	home := t.TempDir()
	if err := os.Symlink(filepath.Join(installed, "bin"), filepath.Join(home, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "pulumi"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(installed, "pulumi", "plugins"), filepath.Join(home, "pulumi", "plugins")); err != nil {
		t.Fatal(err)
	}
	return home
}

// specProgram stands for a platform's program at spec version v: its stack
// output "spec" says which spec the state holds. With a gate it says
// "program running" on stdout and waits for the gate file before it ends,
// so the update's final checkpoint waits too.
func specProgram(v, gate string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		ctx.Export("spec", pulumi.String(v))
		if gate == "" {
			return nil
		}
		fmt.Println("program running")
		for {
			if _, err := os.Stat(gate); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// noClusterPlatform is the local example without a kubeconfig: every check
// beside Pulumi skips the cluster.
func noClusterPlatform(t testing.TB) *model.Platform {
	p := localPlatform(t)
	p.Target.Kubeconfig = ""
	return p
}

// stackSpec is the spec version the stack's state holds (its "spec"
// output), read from the backend.
func stackSpec(t *testing.T, e *Engine, name string) string {
	t.Helper()
	data, _, err := e.readStackState(name)
	if err != nil || data == nil {
		t.Fatalf("reading the state of %s: %v", name, err)
	}
	var cp struct {
		Checkpoint struct {
			Latest struct {
				Resources []struct {
					Type    string         `json:"type"`
					Outputs map[string]any `json:"outputs"`
				} `json:"resources"`
			} `json:"latest"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	for _, r := range cp.Checkpoint.Latest.Resources {
		if r.Type == "pulumi:pulumi:Stack" {
			v, _ := r.Outputs["spec"].(string)
			return v
		}
	}
	return ""
}

const (
	fenceRunnerEnv = "PADDOCK_TEST_FENCE_RUNNER" // runner A's backend
	fenceGateEnv   = "PADDOCK_TEST_FENCE_GATE"
	fenceLeaseEnv  = "PADDOCK_TEST_FENCE_LEASE" // renew,expiry
)

// Short leases, for runner B (this process) and, through fenceLeaseEnv,
// runner A. S3 stamps whole seconds: an expiry of several.
const fenceRenew, fenceExpiry = 300 * time.Millisecond, 5 * time.Second

func shortFenceLeases(t *testing.T) {
	oldRenew, oldExpiry := state.LeaseRenewEvery, state.LeaseExpiry
	state.LeaseRenewEvery, state.LeaseExpiry = fenceRenew, fenceExpiry
	t.Cleanup(func() { state.LeaseRenewEvery, state.LeaseExpiry = oldRenew, oldExpiry })
}

// TestFenceRunnerA is not a test: run by stalledRunner as another host (its
// own PID, UTS and mount namespaces), it runs an up of spec v1 whose program waits
// for the gate, and says how the up ended.
func TestFenceRunnerA(t *testing.T) {
	backend := os.Getenv(fenceRunnerEnv)
	if backend == "" {
		t.Skip("only run as runner A by the stalled-runner tests")
	}
	// Another host the way a CI container is: its own name, and a /proc of
	// its own PID namespace (what reaches the CLI through /proc/<pid> must
	// name this process).
	err := syscall.Sethostname([]byte("fence-runner-a"))
	if err == nil {
		err = syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "")
	}
	if err == nil {
		err = syscall.Mount("proc", "/proc", "proc", 0, "")
	}
	if err != nil {
		fmt.Println("result: becoming another host:", err)
		os.Exit(1)
	}
	renew, expiry, _ := strings.Cut(os.Getenv(fenceLeaseEnv), ",")
	state.LeaseRenewEvery, _ = time.ParseDuration(renew)
	state.LeaseExpiry, _ = time.ParseDuration(expiry)
	e := New(Options{Backend: backend, Stack: "s", Out: os.Stdout, LockWait: time.Minute, Program: specProgram("v1", os.Getenv(fenceGateEnv))})
	_, err = e.Up(context.Background(), noClusterPlatform(t))
	fmt.Printf("result: %v\n", strings.ReplaceAll(fmt.Sprint(err), "\n", " "))
	e.Close()
	os.Exit(0)
}

// stalledRunner: runner A's up of spec v1 stalls (SIGSTOP, its Pulumi CLI
// with it) before its final checkpoint; its lease expires; runner B takes
// the stack over and applies v2. When A resumes, its lease has lapsed: it
// kills its CLI and says so, and B's v2 stands.
//
// With backendOnly, runner A's own fence never fires (its lease, by its
// own clock, runs for hours and is never renewed, so B takes it for dead
// all the same): A's CLI finishes its update and writes its final
// checkpoint after B's, and only the backend's check stands between it
// and B's state. The backend refuses it, and A stops as a lapsed run.
func stalledRunner(t *testing.T, backend string, backendOnly bool) {
	if os.Geteuid() != 0 {
		t.Skip("runner A is another host (its own PID and UTS namespaces), which needs root")
	}
	homeA, homeB := engineHome(t), engineHome(t)
	shortFenceLeases(t)
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	gate := filepath.Join(t.TempDir(), "gate")

	cmd := exec.Command(os.Args[0], "-test.run=^TestFenceRunnerA$", "-test.count=1")
	// A /tmp of its own too, as a container has: its scratch sweep judges
	// owners by the pids of its own namespace.
	leaseA := fenceRenew.String() + "," + fenceExpiry.String()
	if backendOnly {
		leaseA = "1h,2h"
	}
	cmd.Env = append(os.Environ(), fenceRunnerEnv+"="+backend, "PADDOCK_HOME="+homeA, fenceGateEnv+"="+gate, "TMPDIR="+t.TempDir(),
		fenceLeaseEnv+"="+leaseA)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS, Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := -cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(group, syscall.SIGKILL); cmd.Wait() })
	var (
		mu   sync.Mutex
		said strings.Builder
	)
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			said.WriteString(sc.Text() + "\n")
			mu.Unlock()
			lines <- sc.Text()
		}
		close(lines)
	}()
	saidA := func() string { mu.Lock(); defer mu.Unlock(); return said.String() }
	// waitFor waits for a line of A's holding what, up to limit (a guard:
	// past it the test goes on and judges what happened).
	waitFor := func(what string, limit time.Duration) bool {
		deadline := time.After(limit)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return false
				}
				if strings.Contains(l, what) {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !waitFor("program running", 3*time.Minute) {
		t.Fatalf("runner A's update did not start:\n%s", saidA())
	}
	// A stalls, with its Pulumi CLI: its lease is renewed no more.
	if err := syscall.Kill(group, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	// B takes over once A's lease expired: A's lock is stale, and B's
	// update applies v2.
	t.Setenv("PADDOCK_HOME", homeB)
	var saidB strings.Builder
	b := New(Options{Backend: backend, Stack: "s", Out: &saidB, LockWait: 2 * time.Minute, Program: specProgram("v2", "")})
	defer b.Close()
	if _, err := b.Up(context.Background(), noClusterPlatform(t)); err != nil {
		t.Fatalf("runner B's up: %v\n%s", err, saidB.String())
	}
	if got := stackSpec(t, b, "s"); got != "v2" {
		t.Fatalf("after runner B's up the state holds spec %q, want v2", got)
	}

	// A resumes; its program ends once A said its lease lapsed (a matter of
	// milliseconds), or past a guard two orders of magnitude longer, which
	// is how an unfenced runner gets to finish its update.
	if err := syscall.Kill(group, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	lapsed := backendOnly || waitFor("lease in the run journal lapsed", 2*time.Minute)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ended := waitFor("result:", 3*time.Minute)
	syscall.Kill(group, syscall.SIGKILL)
	cmd.Wait()
	if got := stackSpec(t, b, "s"); got != "v2" {
		t.Fatalf("runner A's final checkpoint overwrote runner B's: the state holds spec %q, want B's v2\nrunner A said:\n%s", got, saidA())
	}
	if !lapsed || !ended {
		t.Fatalf("runner A did not say its lease lapsed and its up ended (lapsed %v, ended %v):\n%s", lapsed, ended, saidA())
	}
	result := saidA()[strings.LastIndex(saidA(), "result:"):]
	if !strings.Contains(result, `up of stack "s" stopped: this run's lease in the run journal lapsed`) || !strings.Contains(result, "`paddock up` again") {
		t.Errorf("runner A's up ended with %q, want the lapse and what to run", result)
	}
	if refused := "the backend refused this run's checkpoint: another run changed the stack"; backendOnly && !strings.Contains(result, refused) {
		t.Errorf("runner A's up ended with %q, want the backend's refusal", result)
	}
	t.Logf("runner A said:\n%s", saidA())
	// A's record stays for the next run to recover as a dead run's.
	dead, err := b.deadRuns("s")
	if err != nil || len(dead) == 0 || dead[0].Host != "fence-runner-a" {
		t.Errorf("runner A's record after its lapse: %+v %v", dead, err)
	}
}

func TestFileStalledRunnerWritesNothing(t *testing.T) {
	stalledRunner(t, "file://"+t.TempDir(), false)
}

func TestPostgresStalledRunnerWritesNothing(t *testing.T) {
	stalledRunner(t, pgtest.Start(t).NewDatabase(t), false)
}

func TestS3StalledRunnerWritesNothing(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	stalledRunner(t, srv.BackendURL(srv.NewBucket(t), ""), false)
}

// The same stall, with runner A's own fence out of the way: the backend
// itself refuses A's late checkpoint (staging.go).
func TestFileStalledRunnersLateCheckpointIsRefused(t *testing.T) {
	stalledRunner(t, "file://"+t.TempDir(), true)
}

func TestS3StalledRunnersLateCheckpointIsRefused(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	stalledRunner(t, srv.BackendURL(srv.NewBucket(t), ""), true)
}

// supersededRunner: runner A's update of spec v1 finished; before A prunes
// and repairs, runner B applies v2. A, under the stack's lock, finds the
// state is no longer what its update left and writes nothing of v1 back
// (the cluster keeps what B's run left); with the state unchanged, the
// same step repairs.
func supersededRunner(t *testing.T, backend string) {
	home := engineHome(t)
	t.Setenv("PADDOCK_HOME", home)
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	ctx := context.Background()
	var saidA, saidB strings.Builder
	a := New(Options{Backend: backend, Stack: "s", Out: &saidA, Program: specProgram("v1", "")})
	defer a.Close()
	b := New(Options{Backend: backend, Stack: "s", Out: &saidB, Program: specProgram("v2", "")})
	defer b.Close()

	if _, err := a.Up(ctx, noClusterPlatform(t)); err != nil {
		t.Fatalf("runner A's up: %v\n%s", err, saidA.String())
	}
	applied, err := a.stateDigest("s")
	if err != nil {
		t.Fatal(err)
	}
	recA, err := a.beginRun("up", "s", noClusterPlatform(t))
	if err != nil {
		t.Fatal(err)
	}
	defer recA.abandon()
	if _, err := b.Up(ctx, noClusterPlatform(t)); err != nil {
		t.Fatalf("runner B's up: %v\n%s", err, saidB.String())
	}

	// The cluster as B's run left it: one object differs from A's spec
	// (spec.ingress on a NetworkPolicy, applied by B's run).
	p, srv := loosenedCluster(t, "pulumi-kubernetes-run-b")

	n, err := a.settleUp(ctx, p, "s", recA, nil, applied, nil)
	if !errors.Is(err, ErrSuperseded) || n != 0 || len(srv.updates) != 0 {
		t.Fatalf("runner A, finishing after runner B applied v2: repaired %d, updates %v, err %v; want nothing written back and ErrSuperseded\n%s", n, srv.updates, err, saidA.String())
	}
	if !strings.Contains(err.Error(), "another run changed the stack after it") || !strings.Contains(err.Error(), "run `paddock up` with it again") {
		t.Errorf("the error: %v", err)
	}
	if got := stackSpec(t, a, "s"); got != "v2" {
		t.Errorf("the state holds spec %q, want B's v2", got)
	}
	if recs, _, _ := a.readRuns("s"); len(recs) != 0 {
		t.Errorf("records left: %+v", recs)
	}
	if locks, _ := a.Locks("s"); len(locks) != 0 {
		t.Errorf("locks left: %+v", locks)
	}

	// With the state as its update left it, the same step repairs.
	rec, err := a.beginRun("up", "s", noClusterPlatform(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.abandon()
	now, _ := a.stateDigest("s")
	n, err = a.settleUp(ctx, p, "s", rec, nil, now, nil)
	if err != nil || n != 1 || len(srv.updates) != 1 {
		t.Fatalf("settling on an unchanged state: repaired %d, updates %v, err %v\n%s", n, srv.updates, err, saidA.String())
	}
	if locks, _ := a.Locks("s"); len(locks) != 0 {
		t.Errorf("locks left: %+v", locks)
	}
}

func TestFileSupersededRunnerWritesNothingBack(t *testing.T) {
	supersededRunner(t, "file://"+t.TempDir())
}

func TestPostgresSupersededRunnerWritesNothingBack(t *testing.T) {
	supersededRunner(t, pgtest.Start(t).NewDatabase(t))
}

func TestS3SupersededRunnerWritesNothingBack(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	supersededRunner(t, srv.BackendURL(srv.NewBucket(t), ""))
}

// On postgres:// the database itself refuses the checkpoint of a Pulumi CLI
// whose Paddock run lost the stack, through Pulumi's own write path; the
// holder's and a hand-run CLI's writes pass.
func TestPostgresFenceRefusesAStaleCheckpoint(t *testing.T) {
	cli := pulumiCLI(t)
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	t.Setenv("PADDOCK_HOME", t.TempDir())
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "Pulumi.yaml"), []byte("name: paddock\nruntime: go\n"), 0o600)
	pulumiHome := t.TempDir()
	pulumi := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("nice", append([]string{"-n", "19", cli}, args...)...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "PULUMI_HOME="+pulumiHome, "PULUMI_BACKEND_URL="+backend, "PULUMI_CONFIG_PASSPHRASE=test-passphrase",
			"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true")
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := pulumi(nil, "stack", "init", "dev", "--secrets-provider", "passphrase"); err != nil {
		t.Fatalf("pulumi stack init: %v\n%s", err, out)
	}
	deployment := func(spec string) string {
		d := map[string]any{"version": 3, "deployment": map[string]any{
			"manifest": map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "magic": "", "version": ""},
			"resources": []map[string]any{{"urn": "urn:pulumi:dev::paddock::pulumi:pulumi:Stack::paddock-dev", "custom": false,
				"type": "pulumi:pulumi:Stack", "outputs": map[string]any{"spec": spec}}},
		}}
		file := filepath.Join(t.TempDir(), spec+".json")
		b, _ := json.Marshal(d)
		os.WriteFile(file, b, 0o600)
		return file
	}
	if out, err := pulumi(nil, "stack", "import", "--stack", "dev", "--file", deployment("v0")); err != nil {
		t.Fatalf("pulumi stack import: %v\n%s", err, out)
	}

	e := New(Options{Backend: backend})
	defer e.Close()
	store, err := e.store()
	if err != nil {
		t.Fatal(err)
	}
	fencer := store.(state.Fencer)
	ctx := context.Background()
	recA, err := e.beginRecord("up", "dev", "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer recA.abandon()
	recB, err := e.beginRecord("up", "dev", "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer recB.abandon()
	if err := fencer.TakeFence(ctx, "paddock", "dev", recA.token, recA.key, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	// While A's run lives, B waits for the fence as for a lock.
	err = fencer.TakeFence(ctx, "paddock", "dev", recB.token, recB.key, func(k string) bool { return k == recA.key })
	var held *state.FenceHeldError
	if !errors.As(err, &held) || !isLockError(err) {
		t.Fatalf("B took the fence of a live run: %v", err)
	}
	// A's run is taken for dead: B takes the stack.
	if err := fencer.TakeFence(ctx, "paddock", "dev", recB.token, recB.key, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	envOf := func(r *runRecord) []string {
		var env []string
		for k, v := range fencer.FenceEnv(r.token) {
			env = append(env, k+"="+v)
		}
		return env
	}
	out, err := pulumi(envOf(recA), "stack", "import", "--stack", "dev", "--file", deployment("v1"))
	if err == nil || !strings.Contains(out, "paddock fence: the write of") || !strings.Contains(out, recB.key) {
		t.Fatalf("the CLI of the run that lost the stack wrote its checkpoint: %v\n%s", err, out)
	}
	if got := stackSpec(t, e, "dev"); got != "v0" {
		t.Fatalf("after the refused write the state holds %q, want v0", got)
	}
	if out, err := pulumi(envOf(recB), "stack", "import", "--stack", "dev", "--file", deployment("v2")); err != nil {
		t.Fatalf("the holder's write: %v\n%s", err, out)
	}
	if got := stackSpec(t, e, "dev"); got != "v2" {
		t.Fatalf("after the holder's write the state holds %q, want v2", got)
	}
	// A CLI run by hand carries no Paddock token: the fence is not its.
	if out, err := pulumi(nil, "stack", "import", "--stack", "dev", "--file", deployment("v3")); err != nil {
		t.Fatalf("a hand-run CLI's write: %v\n%s", err, out)
	}
	if got := stackSpec(t, e, "dev"); got != "v3" {
		t.Errorf("after a hand-run write the state holds %q, want v3", got)
	}
}

// The fast path compares before it takes the stack's lock: once it holds
// it, it reads the state again, and when another run wrote it meanwhile it
// repairs nothing from its comparison and leaves the up to the engine.
func TestFastRepairReadsTheStateAgainUnderTheLock(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	ctx := context.Background()
	p, srv := loosenedCluster(t, "kubectl-patch")
	e, file := fakeStack(t, p, nil)
	var out strings.Builder
	e.opts.Out = &out

	res, reason, err := e.fastCheck(ctx, p)
	if err != nil || reason != "" || len(res.Report.Resources) != 1 {
		t.Fatalf("the comparison: %v %q %+v", err, reason, res)
	}
	// Another run writes the state between the comparison and the lock.
	var cp map[string]any
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	cp["checkpoint"].(map[string]any)["latest"].(map[string]any)["manifest"] = map[string]any{"time": "written by another run"}
	b, _ = json.Marshal(cp)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := e.fastRepair(ctx, p, res, time.Now())
	if got != nil || err != nil || len(srv.updates) != 0 {
		t.Fatalf("repaired from a comparison with a state another run replaced: %+v %v, updates %v\n%s", got, err, srv.updates, out.String())
	}
	if !strings.Contains(out.String(), "paddock up: full run: the stack's state changed after it was compared with the cluster") {
		t.Errorf("output: %s", out.String())
	}
	if locks, _ := e.Locks("s"); len(locks) != 0 {
		t.Errorf("locks left: %+v", locks)
	}

	// Compared with the state as it stands, the repair goes on.
	res, reason, err = e.fastCheck(ctx, p)
	if err != nil || reason != "" {
		t.Fatalf("the second comparison: %v %q", err, reason)
	}
	got, err = e.fastRepair(ctx, p, res, time.Now())
	if err != nil || got == nil || got.Changes["repaired"] != 1 || len(srv.updates) != 1 {
		t.Fatalf("the repair on an unchanged state: %+v %v, updates %v\n%s", got, err, srv.updates, out.String())
	}
}

// loosenedCluster is the local platform on an API server on loopback whose
// first NetworkPolicy has an ingress rule from anywhere written by manager:
// the platform, its kubeconfig pointing there, and the server.
func loosenedCluster(t *testing.T, manager string) (*model.Platform, *loopbackAPIServer) {
	t.Helper()
	p := localPlatform(t)
	live := liveGKEObjects(t, p)
	policy := ""
	for _, u := range live {
		if u.GetKind() == "NetworkPolicy" {
			policy = converge.ObjectKey(u)
			break
		}
	}
	loosen(t, live, "NetworkPolicy", policy, manager, []any{map[string]any{}}, "spec", "ingress")
	srv := newLoopbackAPIServer(t, live...)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(srv.kubeconfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Target.Kubeconfig = kubeconfig
	return p, srv
}

// withSpec is deployment d with its stack output "spec" set to v.
func withSpec(t *testing.T, d apitype.UntypedDeployment, v string) apitype.UntypedDeployment {
	t.Helper()
	var dep map[string]any
	if err := json.Unmarshal(d.Deployment, &dep); err != nil {
		t.Fatal(err)
	}
	for _, r := range dep["resources"].([]any) {
		res := r.(map[string]any)
		if res["type"] == "pulumi:pulumi:Stack" {
			res["outputs"] = map[string]any{"spec": v}
		}
	}
	raw, err := json.Marshal(dep)
	if err != nil {
		t.Fatal(err)
	}
	return apitype.UntypedDeployment{Version: d.Version, Deployment: raw}
}

// stagedLateWrite: runner A's staged command read the stack (spec v1);
// runner B then took it over and applied v2; A's Pulumi CLI writes its
// checkpoint late, into A's staging backend, and A copies it back. Nothing
// on A's side stops it (its lease holds, by its own clock): the backend's
// conditional write refuses it, B's v2 stands, and A's lease is revoked.
// Without another writer, the same late copy lands.
func stagedLateWrite(t *testing.T, backend string) {
	home := engineHome(t)
	t.Setenv("PADDOCK_HOME", home)
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	ctx := context.Background()
	var saidA, saidB strings.Builder
	a := New(Options{Backend: backend, Stack: "s", Out: &saidA, Program: specProgram("v1", "")})
	defer a.Close()
	b := New(Options{Backend: backend, Stack: "s", Out: &saidB, Program: specProgram("v2", "")})
	defer b.Close()
	if _, err := a.Up(ctx, noClusterPlatform(t)); err != nil {
		t.Fatalf("runner A's up: %v\n%s", err, saidA.String())
	}
	stackA := a.opened["s"]
	exported, err := stackA.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// lateWrite stages a command of A's that reads the stack, lets between
	// run in the meantime, then has A's CLI write spec v into the staging
	// backend and copies it back.
	lateWrite := func(v string, between func()) (*runRecord, error) {
		rec, err := a.beginRun("up", "s", noClusterPlatform(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rec.abandon)
		unfence, err := a.takeFence("s", rec)
		if err != nil {
			t.Fatal(err)
		}
		st := a.stageOf("s")
		if st == nil {
			t.Fatal("no staging for a run on " + backend)
		}
		g, err := st.seed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer g.remove()
		unfence()
		between()
		// The real CLI, on A's staging backend, as a stalled `up` would.
		stackA.Workspace().SetEnvVar("PULUMI_BACKEND_URL", "file://"+g.root)
		err = stackA.Import(ctx, withSpec(t, exported, v))
		stackA.Workspace().SetEnvVar("PULUMI_BACKEND_URL", backendForCLI(t, backend))
		if err != nil {
			t.Fatalf("A's CLI writing its staging backend: %v", err)
		}
		return rec, g.sync()
	}

	rec, err := lateWrite("v1-late", func() {
		if _, err := b.Up(ctx, noClusterPlatform(t)); err != nil {
			t.Fatalf("runner B's up: %v\n%s", err, saidB.String())
		}
	})
	var lapsed *state.LapsedError
	if !errors.As(err, &lapsed) || !strings.Contains(err.Error(), "the backend refused this run's checkpoint") {
		t.Fatalf("A's late checkpoint after B's: %v\n%s", err, saidA.String())
	}
	if got := stackSpec(t, b, "s"); got != "v2" {
		t.Fatalf("A's late checkpoint overwrote B's: the state holds spec %q, want B's v2", got)
	}
	if rec.check() == nil {
		t.Error("A's lease still holds after the backend refused its checkpoint")
	}
	if locks, _ := b.Locks("s"); len(locks) != 0 {
		t.Errorf("locks left: %+v", locks)
	}

	// No other writer: A's late copy is A's to make.
	if _, err := lateWrite("v3", func() {}); err != nil {
		t.Fatalf("A's late checkpoint with no other writer: %v", err)
	}
	if got := stackSpec(t, b, "s"); got != "v3" {
		t.Errorf("the state holds spec %q, want A's v3", got)
	}
}

// backendForCLI is the URL open hands the CLI for backend.
func backendForCLI(t *testing.T, backend string) string {
	u, _, err := pulumiBackend(backend)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestFileStagedLateWriteIsRefused(t *testing.T) {
	stagedLateWrite(t, "file://"+t.TempDir())
}

func TestS3StagedLateWriteIsRefused(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	stagedLateWrite(t, srv.BackendURL(srv.NewBucket(t), ""))
}
