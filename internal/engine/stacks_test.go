package engine

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

func TestBackendURL(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PADDOCK_HOME", home)
	t.Setenv("PULUMI_BACKEND_URL", "")
	if got, _ := New(Options{}).backendURL(); got != "file://"+filepath.Join(home, "state") {
		t.Errorf("default backend = %s", got)
	}
	t.Setenv("PULUMI_BACKEND_URL", "s3://bucket/paddock")
	if got, _ := New(Options{}).backendURL(); got != "s3://bucket/paddock" {
		t.Errorf("PULUMI_BACKEND_URL ignored: %s", got)
	}
	if got, _ := New(Options{Backend: "gs://b"}).backendURL(); got != "gs://b" {
		t.Errorf("--backend ignored: %s", got)
	}
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "Pulumi.yaml"), []byte("name: paddock\nruntime: go\nbackend:\n  url: azblob://container\n"), 0o644)
	if got, _ := New(Options{ProjectDir: proj}).backendURL(); got != "azblob://container" {
		t.Errorf("project backend.url ignored: %s", got)
	}
	if _, err := New(Options{ProjectDir: proj, Backend: "gs://b"}).backendURL(); err == nil {
		t.Error("--backend that contradicts Pulumi.yaml accepted")
	}
	for _, raw := range []string{
		"s3://key:secret@host/bucket",
		// A URL pasted into its own path repeats the password there.
		"postgres://u:s3cr3t@127.0.0.1:5432/postgres://u:s3cr3t@127.0.0.1:5432/db?sslmode=disable",
		"postgres://u:p%40ss%2Fw@h/db?password=p%40ss%2Fw",
		// libpq's other spellings: no user info, the password in the query,
		// any case, percent-encoded, beside sslpassword.
		"postgres://u@h/db?sslmode=disable&password=s3cr3t",
		"postgres://h/db?PassWord=p%40ss%2Fw&sslpassword=secret",
		"postgres://h/db?p%61ssword=s3cr3t",
		// A URL that does not parse (a bad escape) is masked whole.
		"postgres://u:s3cr3t%zz@h/db",
	} {
		if got := redactURL(raw); strings.Contains(got, "secret") || strings.Contains(got, "s3cr3t") || strings.Contains(got, "p%40ss") || strings.Contains(got, "p@ss") {
			t.Errorf("redactURL kept the secret: %s", got)
		}
		if !URLHoldsSecret(raw) {
			t.Errorf("URLHoldsSecret(%s) = false", raw)
		}
	}
	for _, raw := range []string{
		"file:///home/me/.paddock/state", "s3://bucket/paddock?region=eu&endpoint=http://127.0.0.1:8333",
		"postgres://paddock@127.0.0.1:5432/state?sslmode=disable", "postgres://u:@h/db", "gs://b",
	} {
		if URLHoldsSecret(raw) {
			t.Errorf("URLHoldsSecret(%s) = true, but it holds no credential", raw)
		}
	}
}

func TestLocks(t *testing.T) {
	state := t.TempDir()
	e := New(Options{Backend: "file://" + state})
	dir := filepath.Join(state, ".pulumi", "locks", "organization", ProjectName, "team-a")
	os.MkdirAll(dir, 0o755)
	host, _ := os.Hostname()
	write := func(name string, pid int) {
		b, _ := json.Marshal(map[string]any{"pid": pid, "username": "me", "hostname": host, "timestamp": time.Now()})
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	write("a.json", os.Getpid()) // alive: this test
	locks, err := e.Locks("team-a")
	if err != nil || len(locks) != 1 || locks[0].Stale || locks[0].PID != os.Getpid() {
		t.Fatalf("locks = %+v, %v", locks, err)
	}
	if _, err := e.Cancel(t.Context(), "team-a", false); err == nil || !strings.Contains(err.Error(), "locked by a running update") {
		t.Fatalf("cancel of a live lock: %v", err)
	}
	os.Remove(filepath.Join(dir, "a.json"))
	write("b.json", 1<<22+12345) // no such process, and no run of Paddock's explains it
	locks, _ = e.Locks("team-a")
	if len(locks) != 1 || locks[0].Stale || !locks[0].Unexplained {
		t.Fatalf("a lock no run explains must never be stale: %+v", locks)
	}
	if e.removeStaleLocks("up", "team-a") {
		t.Fatal("removeStaleLocks removed a lock no run explains")
	}
	msg := e.lockError("up", "team-a", errors.New("the stack is currently locked by 1 lock(s)")).Error()
	for _, want := range []string{"another update is running", "no Paddock run explains it", "if it died, run `paddock cancel --stack team-a`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("lock error lacks %q:\n%s", want, msg)
		}
	}
	os.Remove(filepath.Join(dir, "b.json")) // `paddock cancel` does this in the e2e suite

	// The same lock explained by a run this very host journaled, now dead:
	// its pid is asked, and it is stale.
	write("c.json", 1<<22+12345)
	writeRecord(t, e, "team-a", stateRun("up", "team-a", exitedPID(t), host, true, time.Now().Add(-time.Minute)))
	locks, _ = e.Locks("team-a")
	if len(locks) != 1 || !locks[0].Stale || locks[0].Unexplained {
		t.Fatalf("a lock explained by a dead run of this host: %+v", locks)
	}
	msg = e.lockError("up", "team-a", errors.New("the stack is currently locked by 1 lock(s)")).Error()
	if !strings.Contains(msg, "that process is gone") || !strings.Contains(msg, "the update that held it died") {
		t.Errorf("lock error of a dead update:\n%s", msg)
	}
	if !isLockError(errors.New("error: the stack is currently locked by 1 lock(s). Either wait")) {
		t.Error("file backend lock error not recognised")
	}
}

func TestLockErrorFromBackend(t *testing.T) {
	// A backend Paddock does not read (an s3:// bucket would be asked).
	e := New(Options{Backend: "gs://bucket"})
	msg := e.lockError("up", "team-a", errors.New("error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.\n  gs://bucket/.pulumi/locks/organization/paddock/team-a/x.json: created by ci@runner (pid 42) at 2026-11-29T09:00:00Z")).Error()
	if !strings.Contains(msg, "locked by ci@runner (pid 42) at 2026-11-29T09:00:00Z") {
		t.Errorf("the holder the backend named is lost:\n%s", msg)
	}
}

// The inline program's scratch Pulumi.yaml never holds a backend password.
func TestScratchProjectKeepsNoPassword(t *testing.T) {
	if p := scratchProject("postgres://u:s3cr3t@127.0.0.1/state"); p.Backend != nil {
		t.Errorf("scratch Pulumi.yaml names the backend with its password: %+v", p.Backend)
	}
	if p := scratchProject("file:///state"); p.Backend == nil || p.Backend.URL != "file:///state" {
		t.Errorf("scratch Pulumi.yaml lost a plain backend URL: %+v", p.Backend)
	}
}

// stateRun is a run record of op on stack, by pid on host; sameHost gives it
// this process's HostID (its pid is then asked), else another's.
func stateRun(op, stack string, pid int, host string, sameHost bool, started time.Time) state.Run {
	id := "boot another, pid:[1]"
	if sameHost {
		id = state.HostID()
	}
	return state.Run{Op: op, Stack: stack, PID: pid, Host: host, HostID: id, Started: started}
}

// judgeLock is what decides whether a lock may be removed without a person.
func TestJudgeLock(t *testing.T) {
	now := time.Now()
	host, _ := os.Hostname()
	dead := 1<<22 + 4242
	lock := state.Lock{PID: dead, Hostname: host, Timestamp: now.Add(-3 * time.Minute)}
	began := now.Add(-5 * time.Minute)
	rec := func(r state.Run, age time.Duration) *runRecord { return &runRecord{Run: r, age: age} }
	for _, tc := range []struct {
		name               string
		runs               []*runRecord
		stale, unexplained bool
	}{
		{"no run explains it", nil, false, true},
		{"a run of this very host, dead, and the lock's pid gone",
			[]*runRecord{rec(stateRun("up", "s", dead, host, true, began), 0)}, true, false},
		{"a runner with this hostname in another PID namespace, its lease fresh: the pid means nothing here",
			[]*runRecord{rec(stateRun("up", "s", os.Getpid(), host, false, began), 5*time.Second)}, false, false},
		{"that runner's lease expired",
			[]*runRecord{rec(stateRun("up", "s", os.Getpid(), host, false, began), 2*time.Minute)}, true, false},
		{"a dead run that ended before the lock was taken explains nothing (a hand-run pulumi up took it)",
			[]*runRecord{rec(stateRun("up", "s", dead, host, false, now.Add(-time.Hour)), 50*time.Minute)}, false, true},
		{"a run that started after the lock was taken explains nothing",
			[]*runRecord{rec(stateRun("up", "s", dead, host, true, now.Add(time.Minute)), 0)}, false, true},
		{"another host's run explains nothing",
			[]*runRecord{rec(stateRun("up", "s", dead, "elsewhere", false, began), 2*time.Minute)}, false, true},
		{"an expired run explains it, but another run of that host goes on",
			[]*runRecord{
				rec(stateRun("up", "s", os.Getpid(), host, false, began), 2*time.Minute),
				rec(stateRun("up", "s", os.Getpid(), host, false, now), time.Second),
			}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale, unexplained := judgeLock(lock, tc.runs, now)
			if stale != tc.stale || unexplained != tc.unexplained {
				t.Fatalf("judgeLock = stale %v, unexplained %v; want %v, %v", stale, unexplained, tc.stale, tc.unexplained)
			}
		})
	}
}
