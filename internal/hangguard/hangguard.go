// Package hangguard bounds how long a unit test waits for a call that should
// return promptly. The bound is a guard against a hang (set it at ten times
// the call's expected time or more), never a measurement: speed is measured
// by benchmarks, and a loaded machine must not fail a correct call.
package hangguard

import (
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
