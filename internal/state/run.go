package state

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/procfs"
)

// Run is one run's record in the journal, as every backend stores it. It is
// a lease: its run renews it every LeaseRenewEvery (Heartbeat). On the very
// host that wrote it (SameHost: its boot and PID namespace, not its name) the
// run's process is asked; anywhere else a record not renewed for LeaseExpiry
// is dead, so no record is alive forever (Alive).
type Run struct {
	Op       string `json:"op"`
	Stack    string `json:"stack"`
	Platform string `json:"platform,omitempty"`
	PID      int    `json:"pid"`
	Host     string `json:"host"` // the hostname, for people; SameHost judges by HostID
	// HostID is HostID() of the writer: where its PID means something.
	HostID  string    `json:"hostID,omitempty"`
	Started time.Time `json:"started"`
	// ProcessStart is when process PID started: a pid reused by a later
	// process starts at another time.
	ProcessStart time.Time         `json:"processStart,omitzero"`
	Declared     []drift.ObjectRef `json:"declared,omitempty"`
}

// Alive reports whether the run still goes on, its lease last renewed age
// ago. On the host that wrote the record its process is asked; a record of
// another host is alive while its lease is renewed.
func (r *Run) Alive(age time.Duration) bool {
	if !r.SameHost() {
		return age < LeaseExpiry
	}
	if r.PID <= 0 {
		return false
	}
	if err := syscall.Kill(r.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := procfs.ReadStat(r.PID)
	if err != nil {
		// No /proc to ask: the process exists, so it counts as the run's.
		return !errors.Is(err, procfs.ErrNoProcess)
	}
	if st.Exited() {
		return false // killed, and not yet reaped by its parent
	}
	started, err := st.StartTime()
	if err != nil {
		return true
	}
	if !r.ProcessStart.IsZero() {
		// Boot time is read in whole seconds: allow for it.
		d := started.Sub(r.ProcessStart)
		return d > -2*time.Second && d < 2*time.Second
	}
	return !started.After(r.Started.Add(10 * time.Second))
}

// SameHost reports whether the record was written in this kernel's boot and
// this PID namespace, where its PID names the same process it named for its
// writer. Two CI containers can share a hostname and not a PID namespace; a
// record from before HostID was kept is another host's.
func (r *Run) SameHost() bool {
	id := HostID()
	return id != "" && r.HostID == id
}

// HostID names where a PID means one process: this kernel's boot (its
// boot_id) and this process's PID namespace. "" where /proc cannot say.
func HostID() string { return hostID() }

var hostID = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return "boot " + strings.TrimSpace(string(boot)) + ", " + ns
})

// firstLine is err's message up to its first line break, for a one-line
// report (the engine's oneLine, which this package cannot import).
func firstLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
