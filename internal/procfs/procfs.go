// Package procfs reads the few facts Paddock needs about a process from Linux's
// /proc: its state, parent, start time and CPU time. One parser, so the lock
// holder check (engine), the process records of the local cluster, the
// benchmark's CPU accounting and the tests agree on what a pid is.
package procfs

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
)

// Root is the proc file system's mount point (a variable so tests can fake it).
var Root = "/proc"

// ticksPerSecond is USER_HZ, the unit of the stat file's times: 100 on every
// Linux ABI Go supports.
const ticksPerSecond = 100

// ErrNoProcess is returned when the pid does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// Stat is what Paddock reads of /proc/PID/stat.
type Stat struct {
	State      byte   // field 3: R, S, D, Z, ...
	PPID       int    // field 4
	PGRP       int    // field 5: the process group
	UserTicks  uint64 // field 14, in USER_HZ ticks
	SysTicks   uint64 // field 15
	StartTicks uint64 // field 22: clock ticks after boot when the process started
}

// Exited reports whether the process has ended and only its entry remains
// (a zombie, or dead).
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' }

// CPU is the user and system CPU time the process has used.
func (s Stat) CPU() time.Duration {
	return time.Duration(s.UserTicks+s.SysTicks) * time.Second / ticksPerSecond
}

// ParseStat parses the contents of /proc/PID/stat. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func ParseStat(stat string) (Stat, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return Stat{}, fmt.Errorf("malformed stat %q", clip(stat))
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3; field N is f[N-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("malformed stat %q", clip(stat))
	}
	var s Stat
	s.State = f[0][0]
	var err error
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("malformed ppid in stat: %w", err)
	}
	if s.PGRP, err = strconv.Atoi(f[2]); err != nil {
		return Stat{}, fmt.Errorf("malformed pgrp in stat: %w", err)
	}
	for _, p := range []struct {
		dst   *uint64
		field int
	}{{&s.UserTicks, 14}, {&s.SysTicks, 15}, {&s.StartTicks, 22}} {
		if *p.dst, err = strconv.ParseUint(f[p.field-3], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("malformed field %d in stat: %w", p.field, err)
		}
	}
	return s, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// ReadStat reads and parses /proc/PID/stat; ErrNoProcess when pid is gone.
func ReadStat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, ErrNoProcess
	}
	raw, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return Stat{}, ErrNoProcess
		}
		return Stat{}, err
	}
	return ParseStat(string(raw))
}

var (
	bootOnce sync.Once
	bootTime time.Time
	bootErr  error
)

// BootTime is the system's boot time (btime of /proc/stat), read once.
func BootTime() (time.Time, error) {
	bootOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join(Root, "stat"))
		if err != nil {
			bootErr = err
			return
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "btime "); ok {
				sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					bootErr = fmt.Errorf("/proc/stat btime: %w", err)
					return
				}
				bootTime = time.Unix(sec, 0)
				return
			}
		}
		bootErr = errors.New("/proc/stat has no btime line")
	})
	return bootTime, bootErr
}

// StartTime is when the process described by s started, in wall-clock time.
func (s Stat) StartTime() (time.Time, error) {
	boot, err := BootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(s.StartTicks) * time.Second / ticksPerSecond), nil
}
