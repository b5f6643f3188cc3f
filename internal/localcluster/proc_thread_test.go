package localcluster

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// startThenYieldToALockedGoroutine starts `sleep 30` with start, then does
// what the supervisor's goroutines do: a goroutine it spawns (a world host's
// listener) locks its thread and ends, while this one waits on the child. The
// runtime runs a just-spawned goroutine next on the spawner's thread, so
// unless the starter holds its thread, the forking thread is the one retired.
// It returns how the child stands after settle: "running", or the signal or
// exit that ended it.
func startThenYieldToALockedGoroutine(t *testing.T, start func(*exec.Cmd) (release func(), err error), settle time.Duration) string {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	result := make(chan string, 1)
	go func() {
		release, err := start(cmd)
		if err != nil {
			result <- "not started: " + err.Error()
			return
		}
		defer release()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		retired := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			close(retired)
		}()
		<-retired
		select {
		case err := <-exited:
			if ee, ok := err.(*exec.ExitError); ok {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					result <- ws.Signal().String()
					return
				}
			}
			result <- "exited: " + describeExit(err)
		case <-time.After(settle):
			result <- "running"
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	return <-result
}

// plainStart is how the node's processes were started before: the parent-death
// signal set, the thread left free.
func plainStart(cmd *exec.Cmd) (func(), error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return func() {}, cmd.Start()
}

// The kernel sends the parent-death signal when the forking thread exits, not
// the process: started the old way, a node process was killed moments after
// it started whenever another goroutine retired that thread (kubelet,
// containerd and the Cilium agent were, at random, on `local up`).
func TestParentDeathSignalFollowsTheForkingThread(t *testing.T) {
	killed := 0
	for range 10 {
		if startThenYieldToALockedGoroutine(t, plainStart, 300*time.Millisecond) == "terminated" {
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("no child started the old way was killed when a goroutine retired a thread: this test no longer shows the failure startTiedToThread prevents")
	}
	t.Logf("started the old way, %d of 10 children were killed by SIGTERM", killed)
}

func TestStartTiedToThreadSurvivesRetiredThreads(t *testing.T) {
	for i := range 10 {
		if got := startThenYieldToALockedGoroutine(t, startTiedToThread, 300*time.Millisecond); got != "running" {
			t.Fatalf("run %d: the child started by startTiedToThread: %s, want running", i, got)
		}
	}
}
