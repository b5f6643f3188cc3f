package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/paddock-platform/paddock/internal/procfs"
)

// Lock is one update lock held on a stack.
type Lock struct {
	// File is where the lock is: a file, or a key of the PostgreSQL backend.
	File      string    `json:"file"`
	PID       int       `json:"pid"`
	Username  string    `json:"username"`
	Hostname  string    `json:"hostname"`
	Timestamp time.Time `json:"timestamp"`
	// Stale is set when the holder is known to be gone (the engine's Locks
	// judges it).
	Stale bool `json:"stale"`
	// Unexplained is set when no journaled run explains the lock (a hand-run
	// `pulumi up`, a runner without Paddock's journal): it is never taken
	// for stale, since nothing here can tell whether its holder lives.
	Unexplained bool `json:"unexplained,omitempty"`
}

func (l Lock) String() string {
	s := fmt.Sprintf("pid %d on %s (%s) since %s", l.PID, l.Hostname, l.Username, l.Timestamp.Local().Format(time.RFC3339))
	switch {
	case l.Stale:
		s += " — that process is gone"
	case l.Unexplained:
		s += " — no Paddock run explains it, so it is never removed by itself"
	}
	return s
}

// ParseLock reads a lock in Pulumi's format.
func ParseLock(b []byte) (Lock, bool) {
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return Lock{}, false
	}
	return l, true
}

// NewLockID names a lock as Pulumi does: a random UUID.
func NewLockID() string { return uuid.NewString() }

// Hostname is this host's name as locks and run records give it.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}

// HolderAlive reports whether the process pid that took a lock at since
// still runs on this host. A pid now used by a process that started after
// the lock was taken is another process: the holder is gone.
func HolderAlive(pid int, since time.Time) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return true // no /proc to ask: the process exists
	}
	// A killed process is signalled fine until it is reaped, and an orphan
	// is reaped by PID 1, which in a container may take its time (or never
	// come): a zombie holds nothing.
	if st.Exited() {
		return false
	}
	// The margin absorbs clock steps and tick rounding: a pid reused within
	// it still counts as the holder, which errs on the safe side.
	if started, err := st.StartTime(); err == nil && !since.IsZero() && started.After(since.Add(10*time.Second)) {
		return false
	}
	return true
}

// ProcessStart is when process pid started (Linux /proc only).
func ProcessStart(pid int) (time.Time, bool) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return time.Time{}, false
	}
	t, err := st.StartTime()
	return t, err == nil
}
