// Package hangguard bounds how long a unit test waits for a call that should
// return promptly. The bound is a guard against a hang (set it at ten times
// the call's expected time or more), never a measurement: speed is measured
// by benchmarks, and a loaded machine must not fail a correct call.
package hangguard

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Within runs f and returns its result, failing the test with a message
// naming what hung if f has not returned within limit. f keeps running in
// the background after such a failure; the test binary ends it.
func Within[T any](t testing.TB, limit time.Duration, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("%s did not return within %s: a hang, or far slower than its benchmark says", what, limit)
		panic("unreachable")
	}
}

// CPUWatchdog turns a busy hang into a crash that names it (Go's fuzzer has
// no per-input timeout): once this process has spent limit of CPU time
// (user and system) since the call, it panics with describe()'s text. It
// counts CPU, not the clock, so a starved test on a loaded machine is never
// taken for a hang; a call blocked without spinning is go test -timeout's.
// Stop it with the returned func.
func CPUWatchdog(limit time.Duration, describe func() string) (stop func()) {
	return watchCPU(limit, func(used time.Duration) {
		panic(fmt.Sprintf("WATCHDOG: %s used more than %s of CPU (%s)", describe(), limit, used))
	})
}

// watchCPU calls fire once the process has used more than limit of CPU since
// the call, unless stopped first.
func watchCPU(limit time.Duration, fire func(used time.Duration)) (stop func()) {
	start, ok := cpuTime()
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if now, ok := cpuTime(); ok && now-start > limit {
					fire(now - start)
					return
				}
			}
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}

// cpuTime is the CPU time this process has used so far.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
