package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrRunGone is wrapped by RenewRun when the run's record is no longer in
// the journal: another runner took the run for dead and removed it.
var ErrRunGone = errors.New("another runner took the run for dead and removed its record")

// LapsedError is what every write of a run refuses with once its lease
// lapsed (Lease.Check): another runner may have taken the stack over since.
type LapsedError struct {
	Op, Stack string
	// Why says how it lapsed: no renewal for a while, or the record gone.
	Why string
}

func (l *LapsedError) Error() string {
	return fmt.Sprintf("%s of stack %q stopped: this run's lease in the run journal lapsed (%s), so another runner may have taken the stack over; "+
		"this run wrote nothing further (its Pulumi CLI was killed, so it saves no checkpoint; its record and what it may have created are left for the next run, which recovers them as a dead run's): "+
		"run `paddock drift` to see where the stack stands, then `paddock %s` again", l.Op, l.Stack, l.Why, l.Op)
}

// lapseAfter is how long without a renewal a run gives up its lease. It is
// shorter than LeaseExpiry by one renewal period, so a run stops before any
// other runner may take it for dead, whatever the journal's clock rounds
// (S3 stamps whole seconds) or the renewal's round trip took.
func lapseAfter() time.Duration {
	d := LeaseExpiry - LeaseRenewEvery
	if d < LeaseExpiry/2 {
		d = LeaseExpiry / 2
	}
	return d
}

// Lease is a run's hold on its journal record, kept by Heartbeat. It lapses
// for good when no renewal succeeded for lapseAfter (the process stalled, or
// the backend was out of reach) or a renewal finds the record gone; every
// write of the run asks Check first.
type Lease struct {
	journal   Journal
	key       string
	op, stack string
	out       io.Writer
	onLapse   func(error)

	mu      sync.Mutex
	renewed time.Time // when the last renewal that succeeded was sent (monotonic)
	lapsed  *LapsedError

	done, stopped chan struct{}
	stopOnce      sync.Once
}

// Heartbeat renews the lease of record key, written at written (taken
// before the write was sent), every LeaseRenewEvery until Stop. When the
// lease lapses it says so on out once and calls onLapse (if not nil) from
// its own goroutine: the run must then stop writing at once.
func Heartbeat(j Journal, key string, out io.Writer, op, stack string, written time.Time, onLapse func(error)) *Lease {
	l := &Lease{journal: j, key: key, op: op, stack: stack, out: out, onLapse: onLapse, renewed: written,
		done: make(chan struct{}), stopped: make(chan struct{})}
	go l.run()
	return l
}

func (l *Lease) run() {
	defer close(l.stopped)
	t := time.NewTicker(LeaseRenewEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		// A process stopped for a while finds its tick waiting: the lease is
		// judged before anything is sent.
		if l.Check() != nil {
			return
		}
		l.mu.Lock()
		left := lapseAfter() - time.Since(l.renewed)
		l.mu.Unlock()
		timeout := min(LeaseRenewEvery, left)
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := l.journal.RenewRun(ctx, l.key)
		cancel()
		switch {
		case errors.Is(err, ErrRunGone):
			l.lapse("its record was removed: " + ErrRunGone.Error())
			return
		case err != nil:
			if !failing {
				fmt.Fprintf(l.out, "paddock %s: renewing this run's record failed (%s); the run stops if no renewal succeeds within %s\n", l.op, firstLine(err), lapseAfter())
			}
			failing = true
		default:
			l.mu.Lock()
			// A renewal that lands after the lease already ran out renews
			// nothing: others may have taken the run for dead meanwhile.
			if time.Since(l.renewed) < lapseAfter() {
				l.renewed = sent
			}
			l.mu.Unlock()
			failing = false
		}
		if l.Check() != nil {
			return
		}
	}
}

// lapse marks the lease lapsed for good, says so once and calls onLapse.
func (l *Lease) lapse(why string) *LapsedError {
	l.mu.Lock()
	first := l.lapsed == nil
	if first {
		l.lapsed = &LapsedError{Op: l.op, Stack: l.stack, Why: why}
	}
	err := l.lapsed
	l.mu.Unlock()
	select {
	case <-l.done:
		first = false // the run let go of its record: nothing of it runs to stop
	default:
	}
	if first {
		fmt.Fprintf(l.out, "paddock %s: this run's lease in the run journal lapsed (%s): it stops its Pulumi CLI and writes nothing more\n", l.op, why)
		if l.onLapse != nil {
			l.onLapse(err)
		}
	}
	return err
}

// Check is nil while the run holds its lease, else the *LapsedError every
// write refuses with. It judges the time itself, so a write right after a
// stall refuses even before the heartbeat has woken.
func (l *Lease) Check() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	lapsed, since := l.lapsed, time.Since(l.renewed)
	l.mu.Unlock()
	if lapsed != nil {
		return lapsed
	}
	if since >= lapseAfter() {
		return l.lapse(fmt.Sprintf("no renewal succeeded for %s; other runners take a run for dead after %s", since.Round(time.Millisecond), LeaseExpiry))
	}
	return nil
}

// Revoke makes the lease lapse now, for why, as a lapse by time does (it
// says so once, calls onLapse, and every later Check refuses): the backend
// refused a write of the run, so another run holds the stack.
func (l *Lease) Revoke(why string) error {
	if l == nil {
		return nil
	}
	return l.lapse(why)
}

// Stop ends the renewals; the lease's record stays as it is.
func (l *Lease) Stop() {
	if l == nil {
		return
	}
	l.stopOnce.Do(func() { close(l.done); <-l.stopped })
}
