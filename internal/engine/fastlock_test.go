package engine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLockForRepairIsSeenAndSteppedBackFrom(t *testing.T) {
	root := t.TempDir()
	e := New(Options{Backend: "file://" + root, Stack: "s"})
	release, holder, err := e.lockForRepair("s")
	if err != nil || release == nil {
		t.Fatalf("first lock: release=%v holder=%q err=%v", release != nil, holder, err)
	}
	locks, err := e.Locks("s")
	if err != nil || len(locks) != 1 || locks[0].PID != os.Getpid() {
		t.Fatalf("the repair's lock is not seen as the stack's lock: %+v, %v", locks, err)
	}
	// A second holder (another paddock, or Pulumi itself) loses and says to whom.
	again, holder, err := e.lockForRepair("s")
	if err != nil || again != nil || holder == "" {
		t.Fatalf("second lock while held: release=%v holder=%q err=%v", again != nil, holder, err)
	}
	if locks, _ := e.Locks("s"); len(locks) != 1 {
		t.Fatalf("the loser left its lock file: %d locks", len(locks))
	}
	release()
	if locks, _ := e.Locks("s"); len(locks) != 0 {
		t.Fatalf("released lock still there: %+v", locks)
	}
	files, _ := filepath.Glob(filepath.Join(root, ".pulumi", "locks", "*", "*", "s", "*.json"))
	if len(files) != 0 {
		t.Fatalf("lock files left: %v", files)
	}
}
