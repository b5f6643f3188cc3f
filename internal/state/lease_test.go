package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/hangguard"
)

// renewals is a journal whose renewals answer what the test says.
type renewals struct {
	Journal
	mu  sync.Mutex
	err error
}

func (r *renewals) RenewRun(context.Context, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *renewals) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func shortLeases(t *testing.T) {
	oldRenew, oldExpiry := LeaseRenewEvery, LeaseExpiry
	LeaseRenewEvery, LeaseExpiry = 5*time.Millisecond, 60*time.Millisecond
	t.Cleanup(func() { LeaseRenewEvery, LeaseExpiry = oldRenew, oldExpiry })
}

// A lease whose renewals keep failing lapses on its own, says so, and
// calls onLapse once; every later Check refuses with the same error.
func TestLeaseLapsesWithoutRenewals(t *testing.T) {
	shortLeases(t)
	j := &renewals{}
	lapsed := make(chan error, 2)
	l := Heartbeat(j, "k", io.Discard, "up", "s", time.Now(), func(err error) { lapsed <- err })
	defer l.Stop()
	if err := l.Check(); err != nil {
		t.Fatalf("a fresh lease: %v", err)
	}
	j.fail(errors.New("connection refused"))
	err := hangguard.Within(t, time.Minute, "the lease lapsing", func() error { return <-lapsed })
	var le *LapsedError
	if !errors.As(err, &le) || le.Op != "up" || le.Stack != "s" {
		t.Fatalf("lapse: %v", err)
	}
	// Renewals working again bring nothing back: others may have taken
	// the run for dead meanwhile.
	j.fail(nil)
	if err := l.Check(); !errors.As(err, &le) {
		t.Errorf("Check after a lapse: %v", err)
	}
	select {
	case err := <-lapsed:
		t.Errorf("onLapse called twice: %v", err)
	default:
	}
}

// A renewal that finds the record gone lapses the lease at once.
func TestLeaseLapsesWhenTheRecordIsGone(t *testing.T) {
	oldRenew, oldExpiry := LeaseRenewEvery, LeaseExpiry
	LeaseRenewEvery, LeaseExpiry = 5*time.Millisecond, time.Hour
	t.Cleanup(func() { LeaseRenewEvery, LeaseExpiry = oldRenew, oldExpiry })
	j := &renewals{err: fmt.Errorf("the run record k is gone: %w", ErrRunGone)}
	lapsed := make(chan error, 1)
	l := Heartbeat(j, "k", io.Discard, "destroy", "s", time.Now(), func(err error) { lapsed <- err })
	defer l.Stop()
	err := hangguard.Within(t, time.Minute, "the lease lapsing", func() error { return <-lapsed })
	if err == nil || l.Check() == nil {
		t.Fatalf("a gone record did not lapse the lease: %v", err)
	}
}

// Check judges the time itself: a write right after a stall refuses even
// when the heartbeat has not woken.
func TestLeaseCheckJudgesTheTime(t *testing.T) {
	shortLeases(t)
	called := false
	l := &Lease{op: "up", stack: "s", out: io.Discard, onLapse: func(error) { called = true },
		renewed: time.Now().Add(-LeaseExpiry), done: make(chan struct{}), stopped: make(chan struct{})}
	if err := l.Check(); err == nil || !called {
		t.Fatalf("Check of a lease last renewed a LeaseExpiry ago: %v (onLapse called: %v)", err, called)
	}
	// A stopped lease's run let go of its record: nothing to kill.
	called = false
	stopped := &Lease{op: "up", stack: "s", out: io.Discard, onLapse: func(error) { called = true },
		renewed: time.Now().Add(-LeaseExpiry), done: make(chan struct{}), stopped: make(chan struct{})}
	close(stopped.done)
	if stopped.Check() == nil || called {
		t.Errorf("a stopped lease: onLapse called %v", called)
	}
	var nilLease *Lease
	if nilLease.Check() != nil {
		t.Error("a nil lease refuses")
	}
}
