package procfs

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCountsFromTheLastParen(t *testing.T) {
	// A command name with spaces and parentheses, as a process may choose.
	rest := " S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 987654 1000 10"
	for _, comm := range []string{"(sh)", "(a b)", "(x) (y))"} {
		s, err := ParseStat("4242 " + comm + rest)
		if err != nil {
			t.Fatalf("%s: %v", comm, err)
		}
		if s.State != 'S' || s.PPID != 17 || s.PGRP != 4242 || s.UserTicks != 250 || s.SysTicks != 75 || s.StartTicks != 987654 {
			t.Errorf("%s: got %+v", comm, s)
		}
		if s.CPU() != 3250*time.Millisecond {
			t.Errorf("%s: CPU = %v, want 3.25s", comm, s.CPU())
		}
	}
}

func TestParseStatRejectsMalformed(t *testing.T) {
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "1 (x) S p 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q): want an error", bad)
		}
	}
}

// packageInit is when this test binary set its variables, after it started.
var packageInit = time.Now()

func TestReadStatOfThisProcess(t *testing.T) {
	s, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.PPID != os.Getppid() {
		t.Errorf("PPID = %d, want %d", s.PPID, os.Getppid())
	}
	start, err := s.StartTime()
	if err != nil {
		t.Fatal(err)
	}
	// The process began after the machine booted and before this package's
	// variables were set; btime is whole seconds, so allow one second.
	boot, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	if start.Before(boot) || start.After(packageInit.Add(time.Second)) {
		t.Errorf("this test process started at %v: want between boot (%v) and the package's init (%v)", start, boot, packageInit)
	}
	if _, err := ReadStat(-1); err != ErrNoProcess {
		t.Errorf("ReadStat(-1) = %v, want ErrNoProcess", err)
	}
}
