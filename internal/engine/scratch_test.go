package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestSweepScratchRemovesOnlyDeadOwners(t *testing.T) {
	parent := t.TempDir()
	// A process that ran and was reaped: its pid is free.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Skip("no true binary")
	}
	dead := filepath.Join(parent, fmt.Sprintf("%s%d-abc", scratchPrefix, done.Process.Pid))
	alive := filepath.Join(parent, fmt.Sprintf("%s%d-def", scratchPrefix, os.Getpid()))
	other := filepath.Join(parent, "pulumi_auto123")
	for _, d := range []string{dead, alive, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepScratch(parent)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead process's directory survived the sweep (%v)", err)
	}
	for _, d := range []string{alive, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
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
