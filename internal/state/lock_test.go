package state

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/procfs"
)

func TestHolderAliveTellsAReusedPID(t *testing.T) {
	self := os.Getpid()
	started, ok := ProcessStart(self)
	if !ok {
		t.Skip("no /proc on this system")
	}
	if !HolderAlive(self, started.Add(time.Second)) {
		t.Errorf("a process that took the lock after it started is its holder")
	}
	if HolderAlive(self, started.Add(-time.Hour)) {
		t.Errorf("a process started an hour after the lock cannot hold it")
	}
	if HolderAlive(1<<22+4321, started) {
		t.Errorf("a pid that does not exist holds nothing")
	}
}

// A lock's holder that was killed is a zombie until it is reaped, which an
// orphan's PID 1 in a container may put off: it holds nothing. A running
// holder does.
func TestHolderAliveZombieIsGone(t *testing.T) {
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { running.Process.Kill(); running.Wait() }()
	if !HolderAlive(running.Process.Pid, time.Now()) { // it took the lock just now
		t.Errorf("a running holder (pid %d) reads as gone", running.Process.Pid)
	}

	// Not waited for: once it exits it stays a zombie of this process.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	pid := zombie.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exited() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exit", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("signal 0 to the zombie %d fails: the test shows nothing", pid)
	}
	if HolderAlive(pid, time.Now()) {
		t.Errorf("a killed holder not yet reaped (zombie %d) reads as alive", pid)
	}
}
