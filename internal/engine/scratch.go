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
)

// The Pulumi CLI and its Kubernetes provider leave files in the temporary
// directory after every run: the inline program's workspace (pulumi_auto*) and
// the provider's copy of the kubeconfig (kubeconfig*). A scheduled drift job or
// a CI runner would collect one of each per run, forever. Every Pulumi process
// this engine starts therefore gets its own TMPDIR, one per paddock process,
// removed when the command ends (RemoveScratch) or, if the process was killed,
// by the next paddock that starts (sweepScratch).

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
	scratch.dir = dir
	return dir, nil
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
	for _, e := range entries {
		pid, ok := scratchOwner(e.Name())
		if !ok || !e.IsDir() || processRuns(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(parent, e.Name()))
	}
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
