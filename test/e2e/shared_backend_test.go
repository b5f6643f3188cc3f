//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/engine"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// The shared-backend tests run two "runners" of one stack against one
// backend started on loopback, a PostgreSQL database or an S3 bucket: each
// runner has a PADDOCK_HOME of its own, so all they share is the backend
// (and the cluster they deploy to, as CI runners do).

const (
	// sharedPlatform is the platform and stack: no other test's.
	sharedPlatform = "shared-backend"
	// sharedFirstTenant numbers the tenants t0026... (issue 26): no other
	// test's namespaces.
	sharedFirstTenant = 26
	// runnerAHost is the hostname runner A runs under, in UTS and PID
	// namespaces of its own (a CI container): to runner B it is another
	// host. A hostname alone is not: state.Run.SameHost.
	runnerAHost = "paddock-e2e-runner-a"
	// runnerAPID is runner A's pid in its own PID namespace, as its records
	// and locks give it: the namespace's first process.
	runnerAPID = 1
	// sharedLease is the engine's lease (internal/state/state.go LeaseExpiry): a
	// record of another host not renewed for this long belongs to a dead run.
	sharedLease = 60 * time.Second
)

// sharedSpecs writes the platform with one tenant and with three, and names
// the three tenants' namespaces.
func sharedSpecs(t *testing.T) (small, large string, namespaces []string) {
	t.Helper()
	dir := t.TempDir()
	write := func(n int) string {
		d := filepath.Join(dir, fmt.Sprintf("tenants-%d", n))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		spec := specgen.Generate(specgen.Options{Platform: sharedPlatform, Tenants: n, FirstTenant: sharedFirstTenant})
		if err := os.WriteFile(filepath.Join(d, "platform.hcl"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := 0; i < 3; i++ {
		namespaces = append(namespaces, model.DefaultNamespacePrefix+specgen.TenantName(sharedFirstTenant+i))
	}
	return write(1), write(3), namespaces
}

// runner is one runner of the stack: its own PADDOCK_HOME, and the host it
// runs on ("" for this one).
type runner struct {
	name, home, host string
	backend          string   // the shared backend's URL, with its password
	backendEnv       []string // what else its clients need (an S3 identity)
}

// newRunner makes a PADDOCK_HOME of its own for a runner: the suite's tools
// (bin), the provider plugin (pulumi/plugins) and the local cluster's
// kubeconfig (local) are linked in, as a CI runner has its tools and a
// cluster to deploy to; Pulumi's workspace files, state, run journal, locks
// and passphrase are its own, so all the runners share is the backend.
func newRunner(t *testing.T, e *env, name, host string, backend sharedBackend) runner {
	t.Helper()
	home := t.TempDir()
	link := func(from, to string) {
		if err := os.Symlink(from, to); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(e.home, "bin"), filepath.Join(home, "bin"))
	link(filepath.Join(e.home, "local"), filepath.Join(home, "local"))
	if err := os.Mkdir(filepath.Join(home, "pulumi"), 0o700); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(e.home, "pulumi", "plugins"), filepath.Join(home, "pulumi", "plugins"))
	return runner{name: name, home: home, host: host, backend: backend.url, backendEnv: backend.env}
}

// command is paddock run by r: its home, the team's passphrase, the backend
// by the environment (as a CI secret: its password never shows in a logged
// command line) and, for a runner of another host, UTS, PID and mount
// namespaces of its own with /proc mounted for it, as in a container: the
// hostname is r.host (the shell sets it and execs paddock, which is the
// namespace's pid 1, runnerAPID).
func (r runner) command(e *env, args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	if r.host != "" {
		cmd = exec.Command("unshare", append([]string{"--uts", "--pid", "--fork", "--mount-proc", "--", "/bin/sh", "-c", `hostname "$0" && exec "$@"`, r.host, e.bin}, args...)...)
	}
	cmd.Dir = e.repo
	cmd.Env = append(os.Environ(), r.env()...)
	return cmd
}

// env is what runPaddock and destroyAndWait add for a runner of this host.
func (r runner) env() []string {
	return append([]string{"PADDOCK_HOME=" + r.home, "PULUMI_CONFIG_PASSPHRASE=" + teamPassphrase, "PULUMI_BACKEND_URL=" + r.backend}, r.backendEnv...)
}

// run runs paddock as r and waits for it.
func (r runner) run(t *testing.T, e *env, args ...string) run {
	t.Helper()
	return runCommand(t, r.command(e, args...), "runner "+r.name+": paddock "+strings.Join(args, " "))
}

// start starts paddock as r in a process group of its own, to be killed.
func (r runner) start(t *testing.T, e *env, args ...string) *started {
	t.Helper()
	cmd := r.command(e, args...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("runner %s: %v", r.name, err)
	}
	s := &started{cmd: cmd, out: out, done: make(chan error, 1), exited: make(chan struct{})}
	go func() { s.done <- cmd.Wait(); close(s.exited) }()
	return s
}

// driftClean runs `paddock drift` as r and requires a clean report.
func (r runner) driftClean(t *testing.T, e *env, spec string) {
	t.Helper()
	res := r.run(t, e, "drift", spec, "--format", "json")
	if res.code != 0 {
		t.Errorf("runner %s: drift: exit %d, want 0 (clean)\n%s\n%s", r.name, res.code, res.stdout, tail(res.stderr, 20))
		return
	}
	var rep drift.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("runner %s: drift JSON: %v\n%s", r.name, err, res.stdout)
	}
	if rep.Drifted() {
		t.Errorf("runner %s: drift: %+v %+v", r.name, rep.Resources, rep.Unmanaged)
	}
	path := driftPath(res.stderr)
	t.Logf("runner %s: drift clean, answered by %s", r.name, path)
	// The last up (B's, through the engine) recorded the cluster it reached;
	// each runner's kubeconfig lies at its own path and reaches that
	// cluster, so both answer from the database's state directly.
	if !strings.HasPrefix(path, "the fast path") {
		t.Errorf("runner %s: drift was answered by %s, want the fast path (its kubeconfig reaches the cluster the state records)", r.name, path)
	}
}

// keepsNothingOnDisk fails when the runner's home holds a state, run
// journal or passphrase: what the runners share goes through the database.
func (r runner) keepsNothingOnDisk(t *testing.T) {
	t.Helper()
	for _, d := range []string{"state", "runs", "secrets"} {
		if _, err := os.Stat(filepath.Join(r.home, d)); err == nil {
			t.Errorf("runner %s: %s/%s exists: the runner kept state on its own disk", r.name, r.home, d)
		}
	}
}

// requireOtherHost checks that a process can be run as another host (UTS and
// PID namespaces need root): otherwise the test is skipped off root, as the
// suite's real node and pgtest are.
func requireOtherHost(t *testing.T) {
	t.Helper()
	cmd := exec.Command("unshare", "--uts", "--pid", "--fork", "--mount-proc", "--", "/bin/sh", "-c", `hostname "$0" && echo "$(hostname) $$"`, runnerAHost)
	out, err := cmd.CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == fmt.Sprintf("%s %d", runnerAHost, runnerAPID) {
		if h, _ := os.Hostname(); h == runnerAHost {
			t.Fatalf("this host is called %s already: runner A would not be another host", runnerAHost)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("running runner A as another host needs UTS and PID namespaces, so root: %v %s", err, out)
	}
	t.Fatalf("running a process in UTS and PID namespaces as %s: %v %s", runnerAHost, err, out)
}

// sharedBackend is one backend the runners share: its URL, what its
// clients need beside it, and a view of what is stored there.
type sharedBackend struct {
	kind string // "postgres" or "s3", for messages
	url  string
	env  []string
	view backendView
	eng  *engine.Engine // judges the stack's locks from this host
}

// backendView reads Paddock's run journal and Pulumi's locks straight from
// the backend, as any runner would find them.
type backendView interface {
	runs(t *testing.T) []runRow
	lockKeys(t *testing.T) []string
}

// postgresBackend is a fresh database on a PostgreSQL server started on
// loopback for the test.
func postgresBackend(t *testing.T) sharedBackend {
	t.Helper()
	url := pgtest.Start(t).NewDatabase(t)
	conn, err := pgx.Connect(ctxT(t, 10*time.Second), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return newSharedBackend(t, "postgres", url, nil, &pgView{conn: conn})
}

// s3Backend is a fresh bucket on an S3 server (SeaweedFS) started on
// loopback for the test; the test process gets its identity too, for the
// engine that judges the locks.
func s3Backend(t *testing.T) sharedBackend {
	t.Helper()
	srv := s3test.Start(t)
	bucket := srv.NewBucket(t)
	srv.SetEnv(t)
	return newSharedBackend(t, "s3", srv.BackendURL(bucket, ""), srv.Env(), &s3View{client: srv.Client(), bucket: bucket})
}

func newSharedBackend(t *testing.T, kind, url string, env []string, view backendView) sharedBackend {
	eng := engine.New(engine.Options{Backend: url})
	t.Cleanup(eng.Close)
	return sharedBackend{kind: kind, url: url, env: env, view: view, eng: eng}
}

func (b sharedBackend) runs(t *testing.T) []runRow     { t.Helper(); return b.view.runs(t) }
func (b sharedBackend) lockKeys(t *testing.T) []string { t.Helper(); return b.view.lockKeys(t) }

// pgView reads the database.
type pgView struct{ conn *pgx.Conn }

// runRow is one record of Paddock's run journal (table paddock_runs).
type runRow struct {
	key, op, host string
	pid           int
	age           time.Duration // since its lease was last renewed, by the database's clock
}

func (d *pgView) runs(t *testing.T) []runRow {
	t.Helper()
	rows, err := d.conn.Query(ctxT(t, 10*time.Second),
		`SELECT key, record->>'op', record->>'host', (record->>'pid')::int, extract(epoch FROM now() - renewed_at)::float8 FROM paddock_runs ORDER BY key`)
	if err != nil {
		t.Fatalf("reading paddock_runs: %v", err)
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		var r runRow
		var age float64
		if err := rows.Scan(&r.key, &r.op, &r.host, &r.pid, &age); err != nil {
			t.Fatal(err)
		}
		r.age = time.Duration(age * float64(time.Second))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lockKeys are the keys of Pulumi's update locks in its state table.
func (d *pgView) lockKeys(t *testing.T) []string {
	t.Helper()
	rows, err := d.conn.Query(ctxT(t, 10*time.Second), `SELECT key FROM pulumi_state WHERE key LIKE '%/.pulumi/locks/%' ORDER BY key`)
	if err != nil {
		t.Fatalf("reading the locks in pulumi_state: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// engineLocks are the stack's locks as the engine judges them from this
// host (Stale: the holder is known to be gone).
func (d sharedBackend) engineLocks(t *testing.T) []engine.Lock {
	t.Helper()
	locks, err := d.eng.Locks(sharedPlatform)
	if err != nil {
		t.Fatalf("the engine reading the stack's locks: %v", err)
	}
	return locks
}

// s3View lists the bucket.
type s3View struct {
	client *s3.Client
	bucket string
}

// objects are the bucket's objects under prefix, in key order.
func (v *s3View) objects(t *testing.T, prefix string) []s3types.Object {
	t.Helper()
	var out []s3types.Object
	pages := s3.NewListObjectsV2Paginator(v.client, &s3.ListObjectsV2Input{Bucket: &v.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatalf("listing %s in the bucket: %v", prefix, err)
		}
		out = append(out, page.Contents...)
	}
	return out
}

// runs are the records under .paddock/runs/ (the bucket is the test's).
func (v *s3View) runs(t *testing.T) []runRow {
	t.Helper()
	var out []runRow
	for _, o := range v.objects(t, ".paddock/runs/") {
		got, err := v.client.GetObject(ctxT(t, 10*time.Second), &s3.GetObjectInput{Bucket: &v.bucket, Key: o.Key})
		if err != nil {
			t.Fatalf("reading the run record %s: %v", *o.Key, err)
		}
		var rec struct {
			Op   string `json:"op"`
			Host string `json:"host"`
			PID  int    `json:"pid"`
		}
		err = json.NewDecoder(got.Body).Decode(&rec)
		got.Body.Close()
		if err != nil {
			t.Fatalf("the run record %s: %v", *o.Key, err)
		}
		out = append(out, runRow{key: *o.Key, op: rec.Op, host: rec.Host, pid: rec.PID, age: time.Since(*o.LastModified)})
	}
	return out
}

// lockKeys are the keys of Pulumi's update locks.
func (v *s3View) lockKeys(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, o := range v.objects(t, ".pulumi/locks/") {
		out = append(out, *o.Key)
	}
	return out
}

// killMidRun starts runner a's up of spec and kills its process group while
// the API server holds the create of namespace held: the run is certainly
// mid-update, its lock taken and its record written. It returns the
// killed paddock's pid.
func killMidRun(t *testing.T, e *env, a runner, spec, held string) int {
	t.Helper()
	hold := holdNamespaceCreate(t, e, held)
	run := a.start(t, e, "up", spec)
	t.Cleanup(run.stop)
	select {
	case <-hold.held:
	case err := <-run.done:
		t.Fatalf("runner %s's up ended (%v) before creating namespace %s:\n%s", a.name, err, held, tail(run.out.String(), 20))
	case <-time.After(5 * time.Minute):
		t.Fatalf("runner %s's up did not create namespace %s within 5m:\n%s", a.name, held, tail(run.out.String(), 20))
	}
	pid := run.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-run.exited
	hold.Release()
	waitGroupGone(t, pid, 2*time.Minute)
	return pid
}

// leftByA waits until a namespace of A's new tenants exists (the held
// create may complete on the API server once released) and returns those
// that do: a runner recovering after A has them to prune.
func leftByA(t *testing.T, e *env, namespaces []string) []string {
	t.Helper()
	var found []string
	eventually(t, "a namespace of runner A's new tenants", 30*time.Second, func() error {
		found = nil
		for _, ns := range namespaces {
			if _, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{}); err == nil {
				found = append(found, ns)
			}
		}
		if len(found) == 0 {
			return fmt.Errorf("none of %v exists", namespaces)
		}
		return nil
	})
	return found
}

// assertPruned waits until A's new tenants' namespaces are gone and checks
// the tenant both specs declare is still served.
func assertPruned(t *testing.T, e *env, namespaces []string) {
	t.Helper()
	for _, ns := range namespaces[1:] {
		eventually(t, "namespace "+ns+" (created by A, pruned by B) gone", 3*time.Minute, func() error {
			_, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s still exists (%v)", ns, err)
		})
	}
	if ns := k8s.GetNamespace(t, e.kubectl, namespaces[0]); ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s, declared by both specs, is being deleted", namespaces[0])
	}
}

func requireOutput(t *testing.T, who, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not say %q:\n%s", who, w, out)
		}
	}
}

func refuseOutput(t *testing.T, who, out string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(out, w) {
			t.Errorf("%s says %q:\n%s", who, w, out)
		}
	}
}

// TestSharedBackendTwoRunners: two runners of one stack share one PostgreSQL
// backend and nothing else. Runner A's up is killed while the API server
// holds one of its creates; runner B recovers it.
//
// other-host: A runs under another hostname, so B can only go by A's lease
// in the database. While the lease is fresh B's up is refused and changes
// nothing; B's up --lock-wait then waits until A's lease has not been renewed
// for 60 s, removes A's lock, converges, says A's run died while it waited
// and prunes what A created.
//
// same-host: both runners on this host, so B learns A died from the pid A
// recorded, at once.
//
// Either way the backend then holds no run record and no lock, drift from
// both runners is clean, and neither runner kept state on its own disk.
func TestSharedBackendTwoRunners(t *testing.T) {
	t.Run("other-host", func(t *testing.T) { sharedBackendOtherHost(t, live, postgresBackend(t)) })
	t.Run("same-host", func(t *testing.T) { sharedBackendSameHost(t, live, postgresBackend(t)) })
}

// TestSharedBucketTwoRunners is TestSharedBackendTwoRunners on one S3
// bucket (SeaweedFS's gateway on loopback): the journal's records are
// objects whose leases age by the server's clock, Pulumi's lock an object.
func TestSharedBucketTwoRunners(t *testing.T) {
	t.Run("other-host", func(t *testing.T) { sharedBackendOtherHost(t, live, s3Backend(t)) })
	t.Run("same-host", func(t *testing.T) { sharedBackendSameHost(t, live, s3Backend(t)) })
}

func sharedBackendOtherHost(t *testing.T, e *env, db sharedBackend) {
	requireOtherHost(t)
	a, b := newRunner(t, e, "A", runnerAHost, db), newRunner(t, e, "B", "", db)
	small, large, namespaces := sharedSpecs(t)
	defer e.destroyAndWait(t, b.env(), namespaces, small)

	if r := a.run(t, e, "up", small); r.code != 0 {
		t.Fatalf("runner A: up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	if runs, locks := db.runs(t), db.lockKeys(t); len(runs) != 0 || len(locks) != 0 {
		t.Fatalf("after runner A's up succeeded the backend holds run records %+v and locks %v, want none", runs, locks)
	}

	// A grows the platform and is killed mid-update (its namespace's pid 1,
	// and so everything in it).
	killMidRun(t, e, a, large, namespaces[2])
	pidA := runnerAPID
	killed := time.Now()

	// What A left is in the database: its run record, under its own host,
	// and Pulumi's lock, taken on that host; seen from here both are live.
	runs, lockKeys := db.runs(t), db.lockKeys(t)
	if len(runs) != 1 || len(lockKeys) != 1 {
		t.Fatalf("after runner A was killed the backend holds run records %+v and locks %v, want one of each", runs, lockKeys)
	}
	recA := runs[0]
	if recA.op != "up" || recA.host != runnerAHost || recA.pid != pidA {
		t.Fatalf("runner A's run record is %+v, want an up by pid %d on %s", recA, pidA, runnerAHost)
	}
	locks := db.engineLocks(t)
	if len(locks) != 1 || locks[0].Hostname != runnerAHost || locks[0].Stale {
		t.Fatalf("the engine sees the locks %+v, want one live lock taken on %s", locks, runnerAHost)
	}
	t.Logf("runner A (pid %d on %s) killed; its record %s, renewed %s ago; its lock %s", pidA, runnerAHost, recA.key, recA.age.Round(time.Second), locks[0])
	for _, r := range []runner{a, b} {
		r.keepsNothingOnDisk(t)
	}

	// While A's lease is fresh, B's up is refused and changes nothing.
	r := b.run(t, e, "up", small)
	after := db.runs(t)
	out := r.stdout + r.stderr
	t.Logf("runner B's up while A's lease is fresh (%s, %s after the kill): exit %d\n%s", r.took.Round(100*time.Millisecond), time.Since(killed).Round(time.Second), r.code, tail(out, 8))
	if r.code == 0 {
		// Conclusive only if B ended within A's lease: a B slower than that
		// met an expired lease (and the machine is too slow for this check).
		t.Fatalf("runner B's up succeeded, %s after runner A was killed (A's record renewed %s ago when read after the kill; B ran %s): "+
			"within the %s lease that is second-guessing a live run\n%s",
			time.Since(killed).Round(time.Second), recA.age.Round(time.Second), r.took.Round(time.Second), sharedLease, out)
	}
	requireOutput(t, "runner B's refused up", out, "another update is running on this stack, so nothing was changed", "on "+runnerAHost)
	refuseOutput(t, "runner B's refused up", out, "did not finish", "removed the lock", "pruned")
	if len(after) != 1 || after[0].key != recA.key {
		t.Errorf("after runner B's refused up the journal holds %+v, want runner A's record %s alone (B's own record removed)", after, recA.key)
	}
	if keys := db.lockKeys(t); len(keys) != 1 || keys[0] != lockKeys[0] {
		t.Errorf("after runner B's refused up the locks are %v, want runner A's %v", keys, lockKeys)
	}
	leftover := leftByA(t, e, namespaces[1:])
	t.Logf("runner A left %v", leftover)

	// B waits for the stack (--lock-wait). Nothing renews A's lease; once it
	// has expired, and not before, B takes A's lock for a dead run's, runs,
	// and at its end finds that A's run died while it waited and prunes
	// what A left (not the run after it).
	r = b.run(t, e, "up", "--lock-wait", "4m", small)
	waited := time.Since(killed)
	out = r.stdout + r.stderr
	if r.code != 0 {
		t.Fatalf("runner B: up --lock-wait: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	t.Logf("runner B's up --lock-wait (%s, ended %s after the kill):\n%s", r.took.Round(100*time.Millisecond), waited.Round(time.Second), tail(r.stdout, 12))
	requireOutput(t, "runner B's up --lock-wait", r.stdout,
		"waiting up to",
		"removed the lock of a dead update",
		fmt.Sprintf("died after this one started (up by pid %d on %s", pidA, runnerAHost),
		"a dead run created that no state holds",
		"pruned")
	// A's record was renewed recA.age before it was read after the kill: its
	// lease ran out sharedLease after that renewal.
	if expiry := sharedLease - recA.age; waited < expiry {
		t.Errorf("runner B's up ended %s after the kill, before runner A's lease ran out (%s after the kill): A's lock was taken for dead too early", waited.Round(time.Second), expiry.Round(time.Second))
	}
	assertPruned(t, e, namespaces)
	if runs, locks := db.runs(t), db.lockKeys(t); len(runs) != 0 || len(locks) != 0 {
		t.Errorf("after runner B's up the backend holds run records %+v and locks %v, want none", runs, locks)
	}
	b.driftClean(t, e, small)
	a.driftClean(t, e, small)
	for _, r := range []runner{a, b} {
		r.keepsNothingOnDisk(t)
	}
}

func sharedBackendSameHost(t *testing.T, e *env, db sharedBackend) {
	a, b := newRunner(t, e, "A", "", db), newRunner(t, e, "B", "", db)
	small, large, namespaces := sharedSpecs(t)
	defer e.destroyAndWait(t, b.env(), namespaces, small)

	if r := a.run(t, e, "up", small); r.code != 0 {
		t.Fatalf("runner A: up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	pidA := killMidRun(t, e, a, large, namespaces[2])
	host, _ := os.Hostname()
	runs, locks := db.runs(t), db.lockKeys(t)
	if len(runs) != 1 || len(locks) != 1 {
		t.Fatalf("after runner A was killed the backend holds run records %+v and locks %v, want one of each", runs, locks)
	}
	if runs[0].op != "up" || runs[0].host != host || runs[0].pid != pidA {
		t.Fatalf("runner A's run record is %+v, want an up by pid %d on %s", runs[0], pidA, host)
	}
	if l := db.engineLocks(t); len(l) != 1 {
		t.Fatalf("the engine sees the locks %+v, want runner A's", l)
	}
	leftByA(t, e, namespaces[1:])
	for _, r := range []runner{a, b} {
		r.keepsNothingOnDisk(t)
	}

	// On the same host B need not wait out the lease: A's pid is gone.
	r := b.run(t, e, "up", small)
	if r.code != 0 {
		t.Fatalf("runner B: up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	t.Logf("runner B's up (%s):\n%s", r.took.Round(100*time.Millisecond), tail(r.stdout, 12))
	requireOutput(t, "runner B's up", r.stdout,
		"removed the lock of a dead update",
		fmt.Sprintf("did not finish (up by pid %d on %s", pidA, host),
		"a dead run created that no state holds",
		"pruned")
	refuseOutput(t, "runner B's up", r.stdout+r.stderr, "waiting up to")
	assertPruned(t, e, namespaces)
	if runs, locks := db.runs(t), db.lockKeys(t); len(runs) != 0 || len(locks) != 0 {
		t.Errorf("after runner B's up the backend holds run records %+v and locks %v, want none", runs, locks)
	}
	b.driftClean(t, e, small)
	a.driftClean(t, e, small)
	for _, r := range []runner{a, b} {
		r.keepsNothingOnDisk(t)
	}
}
