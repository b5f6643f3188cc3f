package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/state"
)

// These are the engine's tests on a postgres:// backend (package pgstate):
// its journal, leases, locks and fast path against a real PostgreSQL server
// started on loopback (internal/pgtest) and, for the checkpoint, the pinned
// Pulumi CLI writing to it.

func TestPostgresJournalTwoRunners(t *testing.T) {
	journalTwoRunners(t, pgtest.Start(t).NewDatabase(t), "")
}

func TestPostgresLeases(t *testing.T) {
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	t.Setenv("PADDOCK_HOME", t.TempDir())
	oldRenew, oldExpiry := state.LeaseRenewEvery, state.LeaseExpiry
	state.LeaseRenewEvery, state.LeaseExpiry = 200*time.Millisecond, 2*time.Second
	t.Cleanup(func() { state.LeaseRenewEvery, state.LeaseExpiry = oldRenew, oldExpiry })

	var said strings.Builder
	e := New(Options{Backend: backend, Out: &said})
	defer e.Close()
	store, err := e.store()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Pulumi's table, as its login creates it (no CLI in this test), over a
	// connection of the test's own: the store's pool is pgstate's.
	conn, err := pgx.Connect(ctx, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE pulumi_state (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"); err != nil {
		t.Fatal(err)
	}

	// A run on another host, whose pid means nothing here, and the Pulumi
	// lock it took.
	other := state.Run{Op: "up", Stack: "s", PID: 4242, Host: "runner-a.example", Started: time.Now(),
		Declared: []ObjectRef{{APIVersion: "v1", Kind: "Namespace", Name: "agents-t1"}}}
	body, _ := json.Marshal(other)
	if _, err := store.PutRun(ctx, "paddock", "s", "up-runner-a", body); err != nil {
		t.Fatal(err)
	}
	lock, _ := json.Marshal(Lock{PID: 4343, Username: "ci", Hostname: "runner-a.example", Timestamp: time.Now()})
	if _, err := store.AddLock(ctx, "paddock", "s", lock); err != nil {
		t.Fatal(err)
	}
	// Our own run, renewed by its heartbeat.
	self, err := e.beginRun("up", "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer self.end()

	// Within its lease the other host's run is live: not dead, its lock
	// not stale, and a finishing run leaves what it may create alone.
	if dead, _ := e.deadRuns("s"); len(dead) != 0 {
		t.Fatalf("a live lease was taken for dead: %v", dead)
	}
	if locks, _ := e.Locks("s"); len(locks) != 1 || locks[0].Stale {
		t.Fatalf("the live run's lock: %+v", locks)
	}
	if e.removeStaleLocks("up", "s") {
		t.Fatal("the lock of a live run was removed")
	}
	if err := e.finishRun(ctx, "up", &model.Platform{Name: "s"}, "s", self, []DeadRun{{Op: "up", PID: 1, Host: "gone", key: "x"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said.String(), "another run of stack \"s\" is going on (up by pid 4242 on runner-a.example)") {
		t.Errorf("output: %q", said.String())
	}

	// Past the lease, with nobody renewing it: dead, and its lock stale.
	self, err = e.beginRun("up", "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer self.end()
	time.Sleep(state.LeaseExpiry + 500*time.Millisecond)
	dead, err := e.deadRuns("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Host != "runner-a.example" || len(dead[0].Declared) != 1 {
		t.Fatalf("dead runs after the lease expired = %+v", dead)
	}
	// Our own record was renewed meanwhile.
	runs, _ := store.ListRuns(ctx, "paddock", "s")
	for _, r := range runs {
		if r.Key == self.key && r.Age >= state.LeaseExpiry/2 {
			t.Errorf("this run's lease was not renewed: age %s", r.Age)
		}
	}
	if !e.removeStaleLocks("up", "s") {
		t.Fatalf("the lock of the expired run stayed: %q", said.String())
	}
	if locks, _ := e.Locks("s"); len(locks) != 0 {
		t.Errorf("locks left: %+v", locks)
	}
}

// pulumiCLI is the pinned Pulumi CLI, looked up before a test moves
// PADDOCK_HOME.
func pulumiCLI(t *testing.T) string {
	t.Helper()
	cli, err := paths.Tool("pulumi")
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("%v (CI builds it with `make tools`)", err)
		}
		t.Skipf("%v", err)
	}
	return cli
}

func TestPostgresCheckpointWrittenByPulumi(t *testing.T) {
	cli := pulumiCLI(t)
	srv := pgtest.Start(t)
	backend := srv.NewDatabase(t)
	t.Setenv("PADDOCK_HOME", t.TempDir())

	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "Pulumi.yaml"), []byte("name: paddock\nruntime: go\n"), 0o600)
	pulumi := func(args ...string) (string, error) {
		cmd := exec.Command("nice", append([]string{"-n", "19", cli}, args...)...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(),
			"PULUMI_HOME="+t.TempDir(),
			"PULUMI_BACKEND_URL="+backend,
			"PULUMI_CONFIG_PASSPHRASE=test-passphrase",
			"PULUMI_SKIP_UPDATE_CHECK=true",
			"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
		)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := pulumi("stack", "init", "dev", "--secrets-provider", "passphrase"); err != nil {
		t.Fatalf("pulumi stack init: %v\n%s", err, out)
	}
	provider := "urn:pulumi:dev::paddock::pulumi:providers:kubernetes::k8s"
	deployment := map[string]any{"version": 3, "deployment": map[string]any{
		"manifest": map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "magic": "", "version": ""},
		"resources": []map[string]any{
			{"urn": "urn:pulumi:dev::paddock::pulumi:pulumi:Stack::paddock-dev", "custom": false, "type": "pulumi:pulumi:Stack"},
			{"urn": provider, "custom": true, "id": "prov-1", "type": "pulumi:providers:kubernetes"},
			{"urn": "urn:pulumi:dev::paddock::kubernetes:core/v1:Namespace::agents", "custom": true, "id": "agents",
				"type": "kubernetes:core/v1:Namespace", "provider": provider + "::prov-1",
				"inputs":  map[string]any{"metadata": map[string]any{"name": "agents"}},
				"outputs": map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "agents"}}},
		},
	}}
	file := filepath.Join(t.TempDir(), "dev.json")
	b, _ := json.Marshal(deployment)
	os.WriteFile(file, b, 0o600)
	if out, err := pulumi("stack", "import", "--stack", "dev", "--file", file); err != nil {
		t.Fatalf("pulumi stack import: %v\n%s", err, out)
	}

	e := New(Options{Backend: backend})
	defer e.Close()
	objs, pending, err := e.Inventory("dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0] != (ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "agents"}) || len(pending) != 0 {
		t.Fatalf("the checkpoint Pulumi wrote, read back: %+v pending %+v", objs, pending)
	}
	data, where, err := e.readStackState("dev")
	if err != nil || data == nil {
		t.Fatalf("reading the checkpoint: %v", err)
	}
	cp, err := converge.ParseCheckpoint(data)
	if err != nil || cp.Checkpoint.Latest == nil || len(cp.Checkpoint.Latest.Resources) != 3 || cp.Checkpoint.Latest.Resources[2].Inputs["metadata"] == nil {
		t.Fatalf("the full checkpoint: %+v %v", cp, err)
	}
	if strings.Contains(where, srv.Password) || !strings.Contains(where, ".pulumi/stacks/paddock/dev.json") {
		t.Errorf("where the checkpoint is: %q", where)
	}
	// The fast path reads it too: it goes past the backend and the state to
	// the spec (this bare platform's objects do not build).
	_, _, reason := e.fastPlan(context.Background(), &model.Platform{Name: "p", Target: model.Target{Kubeconfig: "/k"}}, "dev")
	if !strings.Contains(reason, "the spec's objects do not build") {
		t.Errorf("the fast path stopped before the spec: %q", reason)
	}
	if d, _, _ := e.readStackState("missing"); d != nil {
		t.Error("a stack that does not exist has a checkpoint")
	}

	// Paddock's lock is Pulumi's: while it is held Pulumi refuses the stack.
	release, holder, err := e.lockForRepair("dev")
	if err != nil || holder != "" {
		t.Fatalf("taking the lock: %v (held by %q)", err, holder)
	}
	if out, err := pulumi("stack", "import", "--stack", "dev", "--file", file); err == nil || !strings.Contains(out, "locked") {
		t.Errorf("pulumi imported into a stack Paddock had locked: %v\n%s", err, out)
	}
	release()
	if locks, _ := e.Locks("dev"); len(locks) != 0 {
		t.Errorf("locks after release: %+v", locks)
	}
	if out, err := pulumi("stack", "import", "--stack", "dev", "--file", file); err != nil {
		t.Errorf("pulumi after the lock was released: %v\n%s", err, out)
	}
}

func TestPostgresErrorsHideThePassword(t *testing.T) {
	srv := pgtest.Start(t)
	good := srv.NewDatabase(t)
	bad := strings.Replace(good, ":"+srv.Password+"@", ":wrong-s3cret-pw@", 1)
	e := New(Options{Backend: bad})
	defer e.Close()
	_, _, err := e.readStackState("dev")
	if err == nil {
		t.Fatal("a wrong password connected")
	}
	if strings.Contains(err.Error(), "wrong-s3cret-pw") || strings.Contains(err.Error(), srv.Password) {
		t.Errorf("the error shows the password: %v", err)
	}
	_, _, reason := e.fastPlan(context.Background(), &model.Platform{Name: "p", Target: model.Target{Kubeconfig: "/k"}}, "dev")
	if strings.Contains(reason, "wrong-s3cret-pw") {
		t.Errorf("the fast path's reason shows the password: %q", reason)
	}
	if got := redactURL(good); strings.Contains(got, srv.Password) {
		t.Errorf("redactURL: %q", got)
	}

	// A URL pasted into another's path (a database name that is a URL)
	// repeats the password outside the user info: hidden there too.
	pasted := strings.Replace(good, "/t_", "/"+url.PathEscape(good)+"t_", 1)
	e2 := New(Options{Backend: pasted})
	defer e2.Close()
	if _, _, err := e2.readStackState("dev"); err == nil || strings.Contains(err.Error(), srv.Password) {
		t.Errorf("a malformed URL's error: %v", err)
	}
}

func TestHideBackendPassword(t *testing.T) {
	e := New(Options{Backend: "postgres://ci:p4ss-w0rd@db.example:5432/state?sslmode=require"})
	err := e.hideBackendPassword(fmt.Errorf("wrapped: %w", context.DeadlineExceeded))
	if err.Error() != "wrapped: context deadline exceeded" {
		t.Errorf("an error without the password changed: %v", err)
	}
	err = e.hideBackendPassword(fmt.Errorf(`unable to open state database "postgres://ci:p4ss-w0rd@db.example:5432/state": %w`, context.DeadlineExceeded))
	if strings.Contains(err.Error(), "p4ss-w0rd") || !strings.Contains(err.Error(), "ci:****@") {
		t.Errorf("redacted: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("the redacted error lost its chain")
	}
}
