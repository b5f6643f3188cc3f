package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

// The Pulumi CLI and its Kubernetes provider leave files in the temporary
// directory after every run: the inline program's workspace (pulumi_auto*) and
// the provider's copy of the kubeconfig (kubeconfig*). A scheduled drift job or
// a CI runner would collect one of each per run, forever. Every Pulumi process
// this engine starts therefore gets its own TMPDIR, one per paddock process,
// removed when the command ends (RemoveScratch) or, if the process was killed,
// by the next paddock that starts (sweepScratch). The staging backends of the
// CLI commands that write a stack's state (staging.go) are made in it too, so
// what a killed paddock staged goes the same way: its last checkpoint was
// already copied to the shared backend as it landed.

const scratchPrefix = "paddock-run-"

var scratch struct {
	sync.Mutex
	dir string
}

// scratchDir is this process's temporary directory for the Pulumi CLI and
// its plugins, made on first use.
func scratchDir() (string, error) {
	scratch.Lock()
	defer scratch.Unlock()
	if scratch.dir != "" {
		return scratch.dir, nil
	}
	parent := os.TempDir()
	sweepScratch(parent)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s%d-", scratchPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("temporary directory for the Pulumi CLI: %w", err)
	}
	if err := writeScratchOwner(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("temporary directory for the Pulumi CLI: %w", err)
	}
	scratch.dir = dir
	return dir, nil
}

// scratchOwnerFile names, in each scratch directory, the process that owns
// it as the sweep must judge it: the pid alone means nothing to a paddock in
// another PID namespace that shares /tmp (a CI container), where it may be
// any process or none.
const scratchOwnerFile = ".owner"

// abandonedAfter is how old a scratch directory no paddock here can judge
// (another PID namespace's, or one without an owner file) must be before the
// sweep removes it.
const abandonedAfter = 7 * 24 * time.Hour

func writeScratchOwner(dir string) error {
	started, _ := state.ProcessStart(os.Getpid())
	body := fmt.Sprintf("%s\n%d\n", state.HostID(), started.UnixNano())
	return os.WriteFile(filepath.Join(dir, scratchOwnerFile), []byte(body), 0o600)
}

// RemoveScratch removes this process's temporary directory; the CLI calls it
// before it exits.
func RemoveScratch() {
	scratch.Lock()
	defer scratch.Unlock()
	if scratch.dir != "" {
		_ = os.RemoveAll(scratch.dir)
		scratch.dir = ""
	}
}

// sweepScratch removes the directories of paddock processes that no longer
// run (killed before they could clean up).
func sweepScratch(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	here := state.HostID()
	for _, e := range entries {
		pid, ok := scratchOwner(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if scratchAbandoned(dir, pid, here) {
			_ = os.RemoveAll(dir)
		}
	}
}

// scratchAbandoned reports whether the scratch directory dir, named for pid,
// belongs to no running paddock: its owner file says this host (same boot,
// same PID namespace) and pid no longer runs, or runs as a process started
// after the owner. What another namespace left, or a directory without an
// owner file, is judged by age alone (abandonedAfter).
func scratchAbandoned(dir string, pid int, here string) bool {
	b, err := os.ReadFile(filepath.Join(dir, scratchOwnerFile))
	host, startText, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if err != nil || here == "" || host != here {
		fi, err := os.Stat(dir)
		return err == nil && time.Since(fi.ModTime()) > abandonedAfter
	}
	if !processRuns(pid) {
		return true
	}
	nanos, err := strconv.ParseInt(strings.TrimSpace(startText), 10, 64)
	if err != nil || nanos == 0 {
		return false
	}
	return !state.HolderAlive(pid, time.Unix(0, nanos))
}

// scratchOwner reads the pid out of "paddock-run-<pid>-<random>".
func scratchOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, scratchPrefix)
	if !ok {
		return 0, false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

// processRuns: signal 0 checks existence without touching the process; a
// process we may not signal (EPERM) still runs.
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
