package engine

import (
	"os"
	"testing"
)

func TestLockStackHoldsOthersOff(t *testing.T) {
	state := t.TempDir()
	e := New(Options{Backend: "file://" + state})
	release, err := e.lockStack("team-a")
	if err != nil {
		t.Fatal(err)
	}
	// Held the way Pulumi holds it: `paddock cancel` and up's lock loop see it.
	locks, err := e.Locks("team-a")
	if err != nil || len(locks) != 1 || locks[0].PID != os.Getpid() || locks[0].Stale {
		t.Fatalf("locks while held: %+v, %v", locks, err)
	}
	if _, err := e.lockStack("team-a"); !isLockError(err) {
		t.Errorf("a second lock of a held stack: %v; want a lock error", err)
	}
	if locks, _ := e.Locks("team-a"); len(locks) != 1 {
		t.Errorf("the refused lock was left behind: %+v", locks)
	}
	release()
	if locks, _ := e.Locks("team-a"); len(locks) != 0 {
		t.Errorf("locks after release: %+v", locks)
	}
	again, err := e.lockStack("team-a")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
