package hangguard

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWithinReturnsTheResult(t *testing.T) {
	if got := Within(t, time.Minute, "an addition", func() int { return 1 + 2 }); got != 3 {
		t.Errorf("Within = %d, want 3", got)
	}
}

// A call that never returns fails the test it guards, naming the call.
func TestWithinFailsOnAHang(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	block := make(chan struct{})
	defer close(block)
	func() {
		defer func() { _ = recover() }() // Fatalf is recorded, then the test's goroutine would stop
		Within(ft, 10*time.Millisecond, "a blocked call", func() int { <-block; return 0 })
	}()
	if ft.msg == "" || !strings.Contains(ft.msg, "a blocked call did not return within 10ms") {
		t.Errorf("message %q", ft.msg)
	}
}

type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}

// The CPU watchdog fires on a spinning call and never on one that only
// waits, however long.
func TestCPUWatchdog(t *testing.T) {
	fired := make(chan time.Duration, 1)
	stop := watchCPU(time.Hour, func(used time.Duration) { fired <- used })
	time.Sleep(300 * time.Millisecond) // waiting costs no CPU
	stop()
	select {
	case used := <-fired:
		t.Fatalf("fired after %s of CPU on a call that waited", used)
	default:
	}

	stop = watchCPU(50*time.Millisecond, func(used time.Duration) { fired <- used })
	defer stop()
	for x := 0; ; x++ { // spin until it fires
		select {
		case used := <-fired:
			if used <= 50*time.Millisecond {
				t.Errorf("fired after %s, below its limit", used)
			}
			return
		default:
		}
	}
}
