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

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
)

// journalEngine is an engine on backend.
func journalEngine(t *testing.T, backend string) *Engine {
	t.Helper()
	return New(Options{Backend: backend})
}

// exitedPID is the pid of a process that has ended (and been reaped).
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	return cmd.Process.Pid
}

// writeRecord puts rec in the journal of stack name as a run would.
func writeRecord(t *testing.T, e *Engine, name string, rec state.Run) string {
	t.Helper()
	dir, err := e.runsDir(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	file := filepath.Join(dir, rec.Op+"-"+rec.Host+"-"+time.Now().Format("150405.000000000")+".json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestJournalDeadAndAliveRuns(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	e := journalEngine(t, "file://"+t.TempDir())
	declared := []ObjectRef{{APIVersion: "v1", Kind: "Namespace", Name: "agents-t1"}}

	// This very process: alive.
	self, err := e.beginRun("up", "fault", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A process that has ended: dead, with what it declared.
	gone := exitedPID(t)
	writeRecord(t, e, "fault", state.Run{Op: "up", Stack: "fault", PID: gone, Host: state.Hostname(), HostID: state.HostID(), Started: time.Now().Add(-time.Minute), Declared: declared})
	// This process's pid, but a start time that is not this process's: the
	// pid was reused, so the run that wrote it is gone.
	reusedStart := time.Now().Add(-time.Hour)
	writeRecord(t, e, "fault", state.Run{Op: "destroy", Stack: "fault", PID: os.Getpid(), Host: state.Hostname(), HostID: state.HostID(), Started: reusedStart, ProcessStart: reusedStart})
	// A run of another host whose pid means nothing here: never taken for dead.
	writeRecord(t, e, "fault", state.Run{Op: "up", Stack: "fault", PID: gone, Host: "another-host.example", Started: time.Now()})

	dead, err := e.deadRuns("fault")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 {
		t.Fatalf("dead runs = %v, want the ended process and the reused pid", dead)
	}
	// Oldest first.
	if dead[0].Op != "destroy" || dead[0].PID != os.Getpid() {
		t.Errorf("first dead run = %+v, want the destroy whose pid was reused", dead[0])
	}
	if dead[1].Op != "up" || dead[1].PID != gone || dead[1].Host != state.Hostname() || len(dead[1].Declared) != 1 || dead[1].Declared[0] != declared[0] {
		t.Errorf("second dead run = %+v, want the up of pid %d declaring %v", dead[1], gone, declared)
	}
	for _, d := range dead {
		if d.Host == "another-host.example" {
			t.Errorf("a run of another host was taken for dead: %+v", d)
		}
	}
	if line := sayDeadRuns("up", "fault", dead); !strings.Contains(line, "did not finish") || !strings.Contains(line, "and 1 more") {
		t.Errorf("the line about dead runs: %q", line)
	}

	// The live run sees the other host's run as going on; the dead are not.
	others, err := e.otherLiveRuns("fault", self)
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 1 || others[0].Host != "another-host.example" {
		t.Errorf("other live runs = %+v, want only the other host's", others)
	}

	if err := e.clearRuns(dead); err != nil {
		t.Fatal(err)
	}
	if dead, _ := e.deadRuns("fault"); len(dead) != 0 {
		t.Errorf("dead runs after clearing them: %v", dead)
	}
	if err := self.end(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(self.key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record of a finished run is still there: %v", err)
	}
}

func TestJournalDamagedRecord(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	e := journalEngine(t, "file://"+t.TempDir())
	dir, _ := e.runsDir("fault")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "torn.json"), []byte(`{"op":"up","pid":`), 0o600)
	os.WriteFile(filepath.Join(dir, "empty.json"), []byte(`{}`), 0o600)
	// A record still being written (renamed in only when whole) is not read.
	os.WriteFile(filepath.Join(dir, ".up-x-1-1.tmp"), []byte(`{`), 0o600)

	dead, err := e.deadRuns("fault")
	if err != nil {
		t.Fatalf("a damaged record failed the query: %v", err)
	}
	if len(dead) != 2 {
		t.Fatalf("dead runs = %+v, want the two damaged records", dead)
	}
	for _, d := range dead {
		if d.Damaged == "" || !strings.Contains(d.String(), "damaged record") {
			t.Errorf("damaged record not reported as such: %+v (%s)", d, d)
		}
	}
	if err := e.clearRuns(dead); err != nil {
		t.Fatal(err)
	}
	if dead, _ := e.deadRuns("fault"); len(dead) != 0 {
		t.Errorf("damaged records left after clearing: %v", dead)
	}
}

func TestJournalSeparateBackendsAndStacks(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	a := journalEngine(t, "file://"+t.TempDir())
	b := journalEngine(t, "file://"+t.TempDir())
	writeRecord(t, a, "fault", state.Run{Op: "up", Stack: "fault", PID: exitedPID(t), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now()})
	writeRecord(t, a, "org/proj/other", state.Run{Op: "up", Stack: "org/proj/other", PID: exitedPID(t), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now()})

	for _, c := range []struct {
		e     *Engine
		stack string
		want  int
	}{{a, "fault", 1}, {a, "org/proj/other", 1}, {a, "other", 0}, {a, "missing", 0}, {b, "fault", 0}} {
		dead, err := c.e.deadRuns(c.stack)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != c.want {
			t.Errorf("backend %s stack %s: %d dead runs, want %d", c.e.opts.Backend, c.stack, len(dead), c.want)
		}
	}
	if state.BackendKey("s3://key:secret@bucket/x") == state.BackendKey("s3://bucket/x") || strings.Contains(state.BackendKey("s3://key:secret@bucket/x"), "secret") {
		t.Errorf("backend keys: %s", state.BackendKey("s3://key:secret@bucket/x"))
	}
}

func TestJournaledRefusedOnLockLeavesNoRecord(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	e := journalEngine(t, "file://"+t.TempDir())
	ctx := context.Background()

	rec, err := e.beginRun("up", "fault", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = e.journaled(ctx, "up", "fault", rec, func() error {
		return errors.New("the stack is currently locked by 1 lock(s)")
	})
	if err == nil || !strings.Contains(err.Error(), "another update is running") {
		t.Fatalf("refused on the lock: %v", err)
	}
	if _, err := os.Stat(rec.key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run refused on the lock left its record: %v", err)
	}

	// A run that started and failed keeps its record: once its process is
	// gone, the next run finds it dead.
	rec, _ = e.beginRun("up", "fault", nil)
	err = e.journaled(ctx, "up", "fault", rec, func() error { return errors.New("apply failed") })
	if err == nil {
		t.Fatal("the failure was lost")
	}
	if _, err := os.Stat(rec.key); err != nil {
		t.Errorf("a run that failed lost its record: %v", err)
	}
	// One that succeeds (and found nothing dead) removes it.
	if err := e.finishRun(ctx, "up", nil, "fault", rec, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec.key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run that succeeded kept its record: %v", err)
	}
}

func TestCheckpointsDefault(t *testing.T) {
	t.Setenv(CheckpointsEnv, "")
	if got := New(Options{}).checkpoints(); got != CheckpointsFinal {
		t.Errorf("default checkpoints = %q, want final", got)
	}
	t.Setenv(CheckpointsEnv, CheckpointsEveryStep)
	if got := New(Options{}).checkpoints(); got != CheckpointsEveryStep {
		t.Errorf("$%s ignored: %q", CheckpointsEnv, got)
	}
	if got := New(Options{Checkpoints: CheckpointsFinal}).checkpoints(); got != CheckpointsFinal {
		t.Errorf("the option does not override the environment: %q", got)
	}
}

func TestRecoverDeadRunsWaitsForOtherRuns(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	var out strings.Builder
	e := New(Options{Backend: "file://" + t.TempDir(), Out: &out})
	p := &model.Platform{Name: "fault"} // no kubeconfig: nothing to reach beside Pulumi
	declared := []ObjectRef{{APIVersion: "v1", Kind: "Namespace", Name: "agents-t1"}}
	writeRecord(t, e, "fault", state.Run{Op: "up", Stack: "fault", PID: exitedPID(t), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now(), Declared: declared})
	self, err := e.beginRun("up", "fault", nil)
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := e.deadRuns("fault")
	if len(dead) != 1 {
		t.Fatalf("dead runs = %v", dead)
	}

	// Another run waits for the lock: what the dead run left may be its
	// work in progress, so nothing is looked at and the dead record stays.
	other := writeRecord(t, e, "fault", state.Run{Op: "up", Stack: "fault", PID: os.Getpid(), Host: "another-host.example", Started: time.Now()})
	if err := e.finishRun(context.Background(), "up", p, "fault", self, dead); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "another run of stack \"fault\" is going on") {
		t.Errorf("output: %q", out.String())
	}
	if left, _ := e.deadRuns("fault"); len(left) != 1 {
		t.Errorf("the dead run's record went while another run was going on: %v", left)
	}
	os.Remove(other)

	// Without a kubeconfig nothing can be pruned: the record stays for a
	// run that can.
	out.Reset()
	self, _ = e.beginRun("up", "fault", nil)
	if err := e.finishRun(context.Background(), "up", p, "fault", self, dead); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "without a kubeconfig") {
		t.Errorf("output: %q", out.String())
	}
	if left, _ := e.deadRuns("fault"); len(left) != 1 {
		t.Errorf("the dead run's record went though nothing was pruned: %v", left)
	}
	if _, err := os.Stat(self.key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished run kept its record: %v", err)
	}

	// A dead run that declared nothing (a destroy) leaves nothing to look
	// for: its record goes.
	e.clearRuns(dead)
	writeRecord(t, e, "fault", state.Run{Op: "destroy", Stack: "fault", PID: exitedPID(t), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now()})
	dead, _ = e.deadRuns("fault")
	self, _ = e.beginRun("destroy", "fault", nil)
	if err := e.finishRun(context.Background(), "destroy", p, "fault", self, dead); err != nil {
		t.Fatal(err)
	}
	if left, _ := e.deadRuns("fault"); len(left) != 0 {
		t.Errorf("a dead destroy's record stayed: %v", left)
	}
}

// A record a run kept under $PADDOCK_HOME/runs before the journal moved
// beside the state is still found.
func TestJournalReadsRecordsFromBeforeTheMove(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	backend := "file://" + t.TempDir()
	e := journalEngine(t, backend)
	dir := filepath.Join(filestate.LegacyRunsRoot(backend), "fault")
	os.MkdirAll(dir, 0o700)
	b, _ := json.Marshal(state.Run{Op: "up", Stack: "fault", PID: exitedPID(t), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now()})
	os.WriteFile(filepath.Join(dir, "up-old.json"), b, 0o600)
	dead, err := e.deadRuns("fault")
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead runs = %v %v, want the record from before the move", dead, err)
	}
	if err := e.clearRuns(dead); err != nil {
		t.Fatal(err)
	}
	if dead, _ := e.deadRuns("fault"); len(dead) != 0 {
		t.Errorf("left after clearing: %v", dead)
	}
}

// A run that holds the stack when this one starts, and dies while this one
// waits for the lock (--lock-wait), is found when this run finishes: its
// record is dealt with now, not left for the run after.
func TestFinishRunFindsRunsThatDiedWhileItWaited(t *testing.T) {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	var out strings.Builder
	e := New(Options{Backend: "file://" + t.TempDir(), Out: &out})
	p := &model.Platform{Name: "fault"} // no kubeconfig: nothing to prune beside Pulumi
	other := writeRecord(t, e, "fault", state.Run{Op: "destroy", Stack: "fault", PID: 4242, Host: "another-host.example", Started: time.Now()})
	dead, self, err := e.startRun("up", "fault", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 0 {
		t.Fatalf("a live run of another host was taken for dead at the start: %v", dead)
	}
	// Its lease runs out while this run waits.
	expired := time.Now().Add(-2 * state.LeaseExpiry)
	if err := os.Chtimes(other, expired, expired); err != nil {
		t.Fatal(err)
	}
	if err := e.finishRun(context.Background(), "up", p, "fault", self, dead); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "died after this one started (destroy by pid 4242 on another-host.example") {
		t.Errorf("the run that died meanwhile is not reported: %q", out.String())
	}
	// A destroy declares nothing to look for: its record goes with this run's.
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record of the run that died while this one waited is still there: %v", err)
	}
	if recs, damaged, _ := e.readRuns("fault"); len(recs)+len(damaged) != 0 {
		t.Errorf("records left: %v %v", recs, damaged)
	}
}

// A run whose record end removed holds no lease: what it still does after
// (an up's repair, which at 1,000 tenants compares the whole platform for
// longer than a lease lasts) is not refused as lapsed, while a record only
// abandoned still lapses.
func TestEndedRunHoldsNoLease(t *testing.T) {
	oldRenew, oldExpiry := state.LeaseRenewEvery, state.LeaseExpiry
	state.LeaseRenewEvery, state.LeaseExpiry = 5*time.Millisecond, 60*time.Millisecond
	t.Cleanup(func() { state.LeaseRenewEvery, state.LeaseExpiry = oldRenew, oldExpiry })
	t.Setenv("PADDOCK_HOME", t.TempDir())
	e := journalEngine(t, "file://"+t.TempDir())
	ended, err := e.beginRun("up", "fault", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.end(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ended.key); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("end left the record: %v", err)
	}
	abandoned, err := e.beginRun("up", "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	abandoned.abandon()
	time.Sleep(2 * state.LeaseExpiry)
	if err := ended.check(); err != nil {
		t.Errorf("a run whose record was removed was refused: %v", err)
	}
	var lapsed *state.LapsedError
	if err := abandoned.check(); !errors.As(err, &lapsed) {
		t.Errorf("an abandoned run's lease did not lapse: %v", err)
	}
}
