package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
	"github.com/paddock-platform/paddock/internal/state/s3state"
)

// These are the engine's tests on an s3:// backend (package s3state): its
// journal, leases, locks and fast path against a real S3 server started on
// loopback (internal/s3test: SeaweedFS) and, for the checkpoint and the
// locks, the pinned Pulumi CLI writing to it.

func TestS3JournalTwoRunners(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	journalTwoRunners(t, srv.BackendURL(srv.NewBucket(t), "paddock"), "paddock/.paddock/runs/paddock/shared/")
}

func TestS3Leases(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	bucket := srv.NewBucket(t)
	backend := srv.BackendURL(bucket, "")
	t.Setenv("PADDOCK_HOME", t.TempDir())
	// The first write to a new bucket makes its storage, which takes
	// seconds on a busy machine, and an object's LastModified is when its
	// write began: done before the leases are timed.
	if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("warm-up"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	// The server's clock counts whole seconds: leases of a few.
	oldRenew, oldExpiry := state.LeaseRenewEvery, state.LeaseExpiry
	state.LeaseRenewEvery, state.LeaseExpiry = 500*time.Millisecond, 6*time.Second
	t.Cleanup(func() { state.LeaseRenewEvery, state.LeaseExpiry = oldRenew, oldExpiry })

	var said strings.Builder
	e := New(Options{Backend: backend, Out: &said})
	defer e.Close()
	store, err := e.store()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A run on another host, whose pid means nothing here, and the Pulumi
	// lock it took.
	other := state.Run{Op: "up", Stack: "s", PID: 4242, Host: "runner-a.example", Started: time.Now(),
		Declared: []ObjectRef{{APIVersion: "v1", Kind: "Namespace", Name: "agents-t1"}}}
	body, _ := json.Marshal(other)
	otherKey, err := store.PutRun(ctx, "paddock", "s", "up-runner-a", body)
	if err != nil {
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
	time.Sleep(state.LeaseExpiry + 1500*time.Millisecond)
	dead, err := e.deadRuns("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Host != "runner-a.example" || len(dead[0].Declared) != 1 {
		t.Fatalf("dead runs after the lease expired = %+v", dead)
	}
	// Our own record was renewed meanwhile, by the server's clock.
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

	// A record this runner kept before Paddock read buckets is still
	// found, and removed from the runner.
	oldRun := state.Run{Op: "destroy", Stack: "s", PID: 4444, Host: "runner-old.example", Started: time.Now()}
	oldBody, _ := json.Marshal(oldRun)
	dir := filepath.Join(filestate.LegacyRunsRoot(backend), "paddock", "s")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "destroy-old.json"), oldBody, 0o600)
	os.Chtimes(filepath.Join(dir, "destroy-old.json"), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	dead, err = e.deadRuns("s")
	var kept []DeadRun
	for _, d := range dead {
		if d.Host == "runner-old.example" {
			kept = append(kept, d)
		}
	}
	if err != nil || len(dead) != 2 || len(kept) != 1 {
		t.Fatalf("dead runs with one kept on the runner = %+v %v", dead, err)
	}
	if err := e.clearRuns(kept); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "destroy-old.json")); !os.IsNotExist(err) {
		t.Errorf("the record kept on the runner is still there: %v", err)
	}

	// A record removed as dead is not brought back by its run's renewal:
	// the renewal fails, and says so.
	if err := store.DeleteRun(ctx, otherKey); err != nil {
		t.Fatal(err)
	}
	if err := store.RenewRun(ctx, otherKey); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("renewing a removed record: %v", err)
	}
	// Nor one rewritten by another runner meanwhile (If-Match on its ETag).
	key, err := store.PutRun(ctx, "paddock", "s", "up-renewed-elsewhere", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader(`{"op":"up"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := store.RenewRun(ctx, key); err == nil {
		t.Error("a renewal overwrote a record it did not write last")
	}
	if runs, _ := store.ListRuns(ctx, "paddock", "s"); len(runs) != 2 {
		t.Errorf("records: %+v", runs)
	}
}

func TestS3CheckpointWrittenByPulumi(t *testing.T) {
	cli := pulumiCLI(t)
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	bucket := srv.NewBucket(t)
	// A path in the URL: Pulumi keeps everything under it.
	backend := srv.BackendURL(bucket, "team/a")
	t.Setenv("PADDOCK_HOME", t.TempDir())

	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "Pulumi.yaml"), []byte("name: paddock\nruntime: go\n"), 0o600)
	pulumiHome := t.TempDir()
	pulumi := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("nice", append([]string{"-n", "19", cli}, args...)...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(),
			"PULUMI_HOME="+pulumiHome,
			"PULUMI_BACKEND_URL=",
			"PULUMI_CONFIG_PASSPHRASE=test-passphrase",
			"PULUMI_SKIP_UPDATE_CHECK=true",
			"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
		)
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := pulumi(nil, "login", backend); err != nil {
		t.Fatalf("pulumi login: %v\n%s", err, out)
	}
	if out, err := pulumi(nil, "stack", "init", "dev", "--secrets-provider", "passphrase"); err != nil {
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
	if out, err := pulumi(nil, "stack", "import", "--stack", "dev", "--file", file); err != nil {
		t.Fatalf("pulumi stack import: %v\n%s", err, out)
	}
	// Where Pulumi put it: under the URL's path.
	ctx := context.Background()
	if _, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("team/a/.pulumi/stacks/paddock/dev.json")}); err != nil {
		t.Fatalf("Pulumi's checkpoint is not at team/a/.pulumi/stacks/paddock/dev.json: %v", err)
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
	if strings.Contains(where, srv.SecretKey) || where != "s3://"+bucket+"/team/a key .pulumi/stacks/paddock/dev.json" {
		t.Errorf("where the checkpoint is: %q", where)
	}
	// The fast path reads it too: it goes past the backend and the state to
	// the spec (this bare platform's objects do not build).
	_, _, reason := e.fastPlan(ctx, &model.Platform{Name: "p", Target: model.Target{Kubeconfig: "/k"}}, "dev")
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
	if out, err := pulumi(nil, "stack", "import", "--stack", "dev", "--file", file); err == nil || !strings.Contains(out, "locked") {
		t.Errorf("pulumi imported into a stack Paddock had locked: %v\n%s", err, out)
	}
	release()
	if locks, _ := e.Locks("dev"); len(locks) != 0 {
		t.Errorf("locks after release: %+v", locks)
	}

	// A checkpoint Pulumi compresses is read too.
	if out, err := pulumi([]string{"PULUMI_DIY_BACKEND_GZIP=true"}, "stack", "import", "--stack", "dev", "--file", file); err != nil {
		t.Fatalf("pulumi after the lock was released: %v\n%s", err, out)
	}
	data, where, err = e.readStackState("dev")
	if err != nil || data == nil || !strings.HasSuffix(where, "dev.json.gz") {
		t.Fatalf("the gzipped checkpoint: %q %v", where, err)
	}
	if cp, err := converge.ParseCheckpoint(data); err != nil || len(cp.Checkpoint.Latest.Resources) != 3 {
		t.Errorf("the gzipped checkpoint does not parse: %v", err)
	}
}

func TestS3ErrorsHideTheSecretKey(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	backend := srv.BackendURL(srv.NewBucket(t), "")
	t.Setenv("PADDOCK_HOME", t.TempDir())
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-s3cret-key-of-the-test")
	e := New(Options{Backend: backend})
	defer e.Close()
	_, _, err := e.readStackState("dev")
	if err == nil {
		t.Fatal("a wrong secret key was let in")
	}
	for _, secret := range []string{"wrong-s3cret-key-of-the-test", srv.SecretKey} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret key: %v", err)
		}
		_, _, reason := e.fastPlan(context.Background(), &model.Platform{Name: "p", Target: model.Target{Kubeconfig: "/k"}}, "dev")
		if strings.Contains(reason, secret) {
			t.Errorf("the fast path's reason shows the secret key: %q", reason)
		}
	}
	if _, err := e.beginRun("up", "dev", nil); err == nil || strings.Contains(err.Error(), "wrong-s3cret-key-of-the-test") {
		t.Errorf("writing a run record with a wrong key: %v", err)
	}
	// Whatever the SDK says, the store hides the key in it.
	s, err := e.store()
	if err != nil {
		t.Fatal(err)
	}
	wrapped := s.(*s3state.Store).Scrub(errors.New("signature by wrong-s3cret-key-of-the-test failed"))
	if strings.Contains(wrapped.Error(), "wrong-s3cret-key-of-the-test") {
		t.Errorf("scrub: %v", wrapped)
	}
}
