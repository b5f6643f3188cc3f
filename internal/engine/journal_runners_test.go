package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

// journalRunnerEnv makes the test binary act as runner A (TestJournalRunnerA),
// on the backend it names.
const journalRunnerEnv = "PADDOCK_TEST_JOURNAL_RUNNER"

// TestJournalRunnerA is not a test: run by journalTwoRunners as a separate
// process with a PADDOCK_HOME of its own, it begins an up of stack "shared" on
// the backend and waits to be killed mid-run.
func TestJournalRunnerA(t *testing.T) {
	backend := os.Getenv(journalRunnerEnv)
	if backend == "" {
		t.Skip("only run as runner A by the two-runner journal tests")
	}
	e := New(Options{Backend: backend})
	defer e.Close()
	declared := []ObjectRef{{APIVersion: "v1", Kind: "Namespace", Name: "agents-shared"}}
	rec, err := e.beginRecord("up", "shared", "shared", declared)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("started", rec.key)
	time.Sleep(time.Minute) // killed before this ends
}

// journalTwoRunners runs two runners, each with a PADDOCK_HOME of its own, on one
// shared backend: B sees A's run as live while A runs, finds it dead with what it
// declared once A is killed mid-up, recovers it and clears it. wantKey, when set,
// is how the key of A's record must begin.
func journalTwoRunners(t *testing.T, backend, wantKey string) {
	t.Helper()
	homeB := t.TempDir()

	// Runner A: another process, another PADDOCK_HOME, the same backend.
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalRunnerA$", "-test.count=1")
	cmd.Env = append(os.Environ(), journalRunnerEnv+"="+backend, "PADDOCK_HOME="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "started "+wantKey) {
		t.Fatalf("runner A did not start its run on the backend (want a key beginning %q): %q", wantKey, line)
	}

	t.Setenv("PADDOCK_HOME", homeB)
	var said strings.Builder
	b := New(Options{Backend: backend, Out: &said})
	defer b.Close()

	// While A runs, B waits for it: not dead, and what it may create is not
	// B's to prune.
	if dead, err := b.deadRuns("shared"); err != nil || len(dead) != 0 {
		t.Fatalf("runner B took a live run for dead: %v %v", dead, err)
	}
	self, err := b.beginRun("up", "shared", nil)
	if err != nil {
		t.Fatal(err)
	}
	others, err := b.otherLiveRuns("shared", self)
	if err != nil || len(others) != 1 || others[0].PID != cmd.Process.Pid {
		t.Fatalf("runner B's view of runner A's live run: %+v %v", others, err)
	}

	// A is killed mid-up: B finds the dead run, with what it declared.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	dead, err := b.deadRuns("shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Op != "up" || dead[0].PID != cmd.Process.Pid || len(dead[0].Declared) == 0 {
		t.Fatalf("runner B's dead runs = %+v, want runner A's up with its declared objects", dead)
	}
	// B's run finishes: with nothing else going on it recovers A's run (no
	// kubeconfig here, so it says it cannot prune and keeps the record for
	// a run that can), then clears it once dealt with.
	if err := b.finishRun(context.Background(), "up", &model.Platform{Name: "shared"}, "shared", self, dead); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said.String(), "without a kubeconfig") {
		t.Errorf("runner B said: %q", said.String())
	}
	if err := b.clearRuns(dead); err != nil {
		t.Fatal(err)
	}
	if recs, damaged, err := b.readRuns("shared"); err != nil || len(recs)+len(damaged) != 0 {
		t.Errorf("records left after recovery: %v %v %v", recs, damaged, err)
	}
}
