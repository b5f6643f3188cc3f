package localcluster

import (
	"github.com/paddock-platform/paddock/internal/procfs"

	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procRecord identifies one process this package started. A pid alone is not an
// identity (pids are reused), so the kernel's start time of the process and the
// binary it runs are recorded with it; a process matches the record only if all
// three still agree.
type procRecord struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"` // /proc/PID/stat field 22, clock ticks since boot
	Exe       string `json:"exe"`       // resolved /proc/PID/exe at start
}

// procInfo is what /proc says about a pid right now.
type procInfo struct {
	PID       int
	State     byte // R, S, D, Z, T, …
	StartTime uint64
	Exe       string // "" when unreadable (zombie, exited, other user)
	Cmdline   []string
}

var errNoProcess = errors.New("no such process")

// cleanExe normalises a /proc/PID/exe target: the kernel appends " (deleted)" when
// the binary was replaced on disk after the process started (for example by a
// rebuild of the pinned tools); the process is still the one that was started.
func cleanExe(exe string) string {
	return strings.TrimSuffix(exe, " (deleted)")
}

// inspect reads the current facts about pid. It returns errNoProcess when the pid
// does not exist.
func inspect(pid int) (procInfo, error) {
	if pid <= 0 {
		return procInfo{}, errNoProcess
	}
	st, err := procfs.ReadStat(pid)
	if errors.Is(err, procfs.ErrNoProcess) {
		return procInfo{}, errNoProcess
	}
	if err != nil {
		return procInfo{}, err
	}
	dir := filepath.Join(procfs.Root, strconv.Itoa(pid))
	info := procInfo{PID: pid, State: st.State, StartTime: st.StartTicks}
	if exe, err := os.Readlink(filepath.Join(dir, "exe")); err == nil {
		info.Exe = cleanExe(exe)
	}
	if cl, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		info.Cmdline = splitCmdline(cl)
	}
	return info, nil
}

func splitCmdline(b []byte) []string {
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// recordProcess captures the identity of a process that was just started.
func recordProcess(pid int) (procRecord, error) {
	info, err := inspect(pid)
	if err != nil {
		return procRecord{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	if info.Exe == "" {
		return procRecord{}, fmt.Errorf("pid %d: cannot read its executable", pid)
	}
	return procRecord{PID: pid, StartTime: info.StartTime, Exe: info.Exe}, nil
}

// matchRecord says whether info is the process described by rec, and if not, why.
// Pure: the unit tests drive it with made-up procInfo values.
func matchRecord(rec procRecord, info procInfo) (bool, string) {
	switch {
	case rec.PID <= 0:
		return false, "no pid recorded"
	case info.PID != rec.PID:
		return false, fmt.Sprintf("pid %d is not running", rec.PID)
	case info.State == 'Z' || info.State == 'X':
		return false, fmt.Sprintf("pid %d exited (zombie, not yet reaped)", rec.PID)
	case info.StartTime != rec.StartTime:
		return false, fmt.Sprintf("pid %d now belongs to another process (started later)", rec.PID)
	case rec.Exe != "" && info.Exe != rec.Exe:
		return false, fmt.Sprintf("pid %d runs %s, not %s", rec.PID, orUnknown(info.Exe), rec.Exe)
	}
	return true, ""
}

// matchBinary says whether info is a live process running a binary named like
// wantExe whose command line mentions marker (a directory only this cluster's
// processes use). This is how the control plane's components are recognised
// (controlplane.go): their pid files, plain pids for people and scripts, hold no
// start time (nor did kwokctl's, still read to stop an older cluster). Only the binary's base
// name is compared, because a rebuild of the pinned tools relinks the tool path to
// a new build while the old process keeps running; the marker carries the
// identity.
func matchBinary(info procInfo, wantExe, marker string) (bool, string) {
	switch {
	case info.State == 'Z' || info.State == 'X':
		return false, fmt.Sprintf("pid %d exited (zombie, not yet reaped)", info.PID)
	case info.Exe == "":
		return false, fmt.Sprintf("pid %d: executable unreadable", info.PID)
	case wantExe != "" && filepath.Base(info.Exe) != filepath.Base(wantExe):
		return false, fmt.Sprintf("pid %d runs %s, not %s", info.PID, info.Exe, filepath.Base(wantExe))
	case marker != "" && !strings.Contains(strings.Join(info.Cmdline, " "), marker):
		return false, fmt.Sprintf("pid %d does not belong to %s", info.PID, marker)
	}
	return true, ""
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown binary"
	}
	return s
}

// alive reports whether the recorded process is still the one that was started.
func (r procRecord) alive() (bool, string) {
	info, err := inspect(r.PID)
	if err != nil {
		if errors.Is(err, errNoProcess) {
			return false, fmt.Sprintf("pid %d is not running", r.PID)
		}
		return false, err.Error()
	}
	return matchRecord(r, info)
}

// resolveExe returns the fully resolved path of a binary, as /proc/PID/exe shows it.
func resolveExe(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		if abs, err := filepath.Abs(r); err == nil {
			return abs
		}
		return r
	}
	return p
}

// terminate stops the recorded process: SIGTERM, then SIGKILL after grace. The
// identity is checked before every signal, so a pid that was reused by an
// unrelated process is never signalled. It returns whether a signal was sent.
func terminate(rec procRecord, grace time.Duration) (bool, error) {
	return stopVerified(rec.PID, func() bool { ok, _ := rec.alive(); return ok }, grace)
}

// stopVerified signals pid only while owned() holds.
func stopVerified(pid int, owned func() bool, grace time.Duration) (bool, error) {
	if !owned() {
		return false, nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return true, fmt.Errorf("signal pid %d: %w", pid, err)
	}
	if waitGone(owned, grace) {
		return true, nil
	}
	if owned() {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return true, fmt.Errorf("kill pid %d: %w", pid, err)
		}
	}
	if !waitGone(owned, 10*time.Second) {
		return true, fmt.Errorf("pid %d did not exit after SIGKILL", pid)
	}
	return true, nil
}

func waitGone(owned func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !owned() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startTiedToThread starts cmd so that the kernel sends it SIGTERM should this
// process die without stopping it. The kernel sends that signal when the
// thread that forked the child exits, not the process, and Go retires a
// thread whenever a goroutine locked to it ends (the world hosts' listeners
// do): a child forked on such a thread was killed moments after it started.
// So the calling goroutine is locked to its thread until release is called,
// which must be after the child has exited, from the same goroutine.
func startTiedToThread(cmd *exec.Cmd) (release func(), err error) {
	runtime.LockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}
