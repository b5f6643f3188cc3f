package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

func TestSweepScratchRemovesOnlyDeadOwners(t *testing.T) {
	parent := t.TempDir()
	// A process that ran and was reaped: its pid is free.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	here := state.HostID()
	if here == "" {
		t.Fatal("no host id here (no /proc?)")
	}
	started, _ := state.ProcessStart(os.Getpid())
	dir := func(pid int, tag, owner string, age time.Duration) string {
		d := filepath.Join(parent, fmt.Sprintf("%s%d-%s", scratchPrefix, pid, tag))
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, scratchOwnerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if age > 0 {
			old := time.Now().Add(-age)
			if err := os.Chtimes(d, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	ours := func(start time.Time) string { return fmt.Sprintf("%s\n%d\n", here, start.UnixNano()) }
	otherNS := "boot x, pid:[4026531999]\n1\n"
	gone := []string{
		dir(done.Process.Pid, "dead", ours(time.Now().Add(-time.Minute)), 0),
		// This pid, but a process that started after the owner: the owner is gone.
		dir(os.Getpid(), "reused", ours(started.Add(-time.Hour)), 0),
		dir(done.Process.Pid, "old-other-ns", otherNS, 8*24*time.Hour),
		dir(done.Process.Pid, "old-no-owner", "", 8*24*time.Hour),
	}
	kept := []string{
		dir(os.Getpid(), "alive", ours(started), 0),
		// Another PID namespace's (a CI container sharing /tmp): its pid
		// means nothing here, whether or not some process here has it.
		dir(done.Process.Pid, "other-ns", otherNS, 0),
		dir(os.Getpid(), "other-ns-live-pid", otherNS, 0),
		// Written by an older paddock, without an owner file.
		dir(done.Process.Pid, "no-owner", "", 0),
		filepath.Join(parent, "pulumi_auto123"),
	}
	os.MkdirAll(kept[len(kept)-1], 0o700)
	sweepScratch(parent)
	for _, d := range gone {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s survived the sweep (%v)", filepath.Base(d), err)
		}
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
}

func TestScratchOwner(t *testing.T) {
	for name, want := range map[string]int{
		"paddock-run-42-x1y2": 42,
		"paddock-run-42":      0,
		"paddock-run-x-1":     0,
		"paddock-run--1-x":    0,
		"pulumi_auto1":        0,
	} {
		pid, ok := scratchOwner(name)
		if ok != (want != 0) || pid != want && want != 0 {
			t.Errorf("scratchOwner(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
}

func TestScratchDirIsMadeOnceAndRemoved(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, err := scratchDir()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := scratchDir()
	if a != b {
		t.Errorf("two scratch directories in one process: %s, %s", a, b)
	}
	RemoveScratch()
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("scratch directory survived RemoveScratch (%v)", err)
	}
}
