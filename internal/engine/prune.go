package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// This file is what an up or destroy does about the runs before it that did
// not finish (journal.go): what they created that no state holds is adopted
// by the up when the spec declares it (creates are server-side applies) and
// deleted here when it does not (converge.PruneSelection,
// converge.DeleteLeftovers). It also holds the wait for the platform's
// namespaces and CRDs that a killed destroy left being deleted
// (converge.WaitTerminating).

// Bounds of the waits beside Pulumi: variables so tests can shorten them.
var (
	pruneWait       = 3 * time.Minute
	terminatingWait = 3 * time.Minute
)

// startRun is how an up or destroy of stack name begins: it says whether
// runs before it did not finish, and writes its own record. p declares what
// the run may create (nil for a destroy).
func (e *Engine) startRun(op, name string, p *model.Platform) ([]DeadRun, *runRecord, error) {
	dead, err := e.deadRuns(name)
	if err != nil {
		return nil, nil, err
	}
	if len(dead) > 0 {
		fmt.Fprintln(e.opts.Out, sayDeadRuns(op, name, dead))
	}
	rec, err := e.beginRun(op, name, p)
	return dead, rec, err
}

// journaled runs update under the stack's lock (withLock). A run that never
// got the lock changed nothing: its record goes. Any other end keeps it
// until finishRun, so a run that failed or was killed is found dead.
//
// Each attempt first takes the stack's fence for the run (takeFence: on a
// backend that checks one, the CLI's checkpoint carries the run's token). A
// run whose lease lapses meanwhile has its CLI killed (fence.go) and ends
// with the lapse, never with the CLI's own error.
func (e *Engine) journaled(ctx context.Context, op, name string, rec *runRecord, update func() error) error {
	ran := false
	err := e.withLock(ctx, op, name, rec.check, func() error {
		unfence, err := e.takeFence(name, rec)
		defer unfence()
		if err != nil {
			return err // nothing ran: the record goes, as on a lock
		}
		err = update()
		if !isLockError(err) {
			ran = true
		}
		return err
	})
	if lapsed := rec.check(); lapsed != nil {
		rec.abandon()
		return lapsed
	}
	if !ran {
		if endErr := rec.end(); endErr != nil {
			fmt.Fprintf(e.opts.Out, "paddock %s: %v\n", op, endErr)
		}
	} else if err != nil {
		rec.abandon() // kept, and left to expire: the next run finds it dead
	}
	return err
}

// finishRun ends a run that succeeded: it deletes what the dead runs before
// it left, then removes their records and its own. declared are the objects
// the spec now declares (none after a destroy).
func (e *Engine) finishRun(ctx context.Context, op string, p *model.Platform, name string, rec *runRecord, dead []DeadRun) error {
	if err := rec.check(); err != nil {
		return err
	}
	dead, err := e.deadRunsSince(op, name, dead)
	if err != nil {
		return err
	}
	if len(dead) > 0 {
		if err := e.recoverDeadRuns(ctx, op, p, name, rec, dead); err != nil {
			return err
		}
	}
	if err := rec.end(); err != nil {
		// The run itself succeeded; the next one only looks for leftovers.
		fmt.Fprintf(e.opts.Out, "paddock %s: %v\n", op, err)
	}
	return nil
}

// deadRunsSince adds to dead the runs that died after this run started: a
// run that held the stack's lock while this one waited for it (--lock-wait)
// was alive when startRun looked, and what it left is this run's to prune.
func (e *Engine) deadRunsSince(op, name string, dead []DeadRun) ([]DeadRun, error) {
	now, err := e.deadRuns(name)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, d := range dead {
		known[d.key] = true
	}
	var since []DeadRun
	for _, d := range now {
		if !known[d.key] {
			since = append(since, d)
		}
	}
	for _, d := range since {
		fmt.Fprintf(e.opts.Out, "paddock %s: a run of stack %q died after this one started (%s): deleting what it created that no state holds and the spec does not declare\n", op, name, d)
	}
	return append(dead, since...), nil
}

func (e *Engine) recoverDeadRuns(ctx context.Context, op string, p *model.Platform, name string, self *runRecord, dead []DeadRun) error {
	// A run that waited for the lock behind this one may be creating objects
	// the state does not hold yet: they are not leftovers.
	others, err := e.otherLiveRuns(name, self)
	if err != nil {
		return err
	}
	if len(others) > 0 {
		fmt.Fprintf(e.opts.Out, "paddock %s: another run of stack %q is going on (%s by pid %d on %s): what the dead run left is for the run after it\n",
			op, name, others[0].Op, others[0].PID, others[0].Host)
		return nil
	}
	var declared []ObjectRef
	if op == "up" && self != nil {
		declared = self.Declared
	}
	done, err := e.pruneLeftovers(ctx, op, p, name, self, dead, declared)
	if err != nil || !done {
		return err
	}
	if err := self.check(); err != nil {
		return err
	}
	return e.clearRuns(dead)
}

// pruneLeftovers deletes the platform's labelled objects that a dead run
// declared, no state holds and declared does not name, and waits for them to
// go. done is false when the cluster cannot be reached beside Pulumi (no
// kubeconfig): the dead runs' records stay for a later run.
func (e *Engine) pruneLeftovers(ctx context.Context, op string, p *model.Platform, name string, self *runRecord, dead []DeadRun, declared []ObjectRef) (done bool, err error) {
	var candidates []ObjectRef
	for _, d := range dead {
		if d.Damaged != "" {
			fmt.Fprintf(e.opts.Out, "paddock %s: the run record %s is damaged (%s): removing it; anything its run left that no state holds shows in `paddock drift` (S05)\n", op, d.key, d.Damaged)
		}
		candidates = append(candidates, d.Declared...)
	}
	if len(candidates) == 0 {
		return true, nil // dead destroys and damaged records create nothing known
	}
	c, err := e.liveClients(ctx, p)
	if errors.Is(err, converge.ErrNoKubeconfig) {
		fmt.Fprintf(e.opts.Out, "paddock %s: cannot look for what the dead run left without a kubeconfig for the cluster; `paddock drift` reports it (S05)\n", op)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	labelled, err := drift.Labelled(ctx, c.Disco, c.Meta, p.Name)
	if err != nil {
		return false, fmt.Errorf("%s of stack %q: looking for what a dead run left: %w", op, name, err)
	}
	inState, _, err := e.Inventory(name)
	if err != nil {
		return false, err
	}
	prune := converge.PruneSelection(labelled, candidates, inState, declared)
	if len(prune) == 0 {
		return true, nil
	}
	if err := self.check(); err != nil {
		return false, err
	}
	start := time.Now()
	fmt.Fprintf(e.opts.Out, "paddock %s: deleting %d object(s) a dead run created that no state holds and the spec does not declare: %s\n", op, len(prune), converge.FirstRefs(prune, 3))
	if err := converge.DeleteLeftovers(ctx, c, prune, pruneWait); err != nil {
		return false, fmt.Errorf("%s of stack %q: %w\n  run %s again to retry; `paddock drift` lists what is left (S05)", op, name, err, op)
	}
	fmt.Fprintf(e.opts.Out, "paddock %s: pruned %d undeclared object(s) left by a dead run in %.1fs\n", op, len(prune), time.Since(start).Seconds())
	return true, nil
}

// waitTerminating waits, up to terminatingWait, for the platform's
// namespaces and CRDs that are being deleted (a destroy killed midway leaves
// them so) to be gone: an apply into a namespace being deleted is refused,
// and a CRD being deleted takes what the apply creates along with it.
func (e *Engine) waitTerminating(ctx context.Context, op string, p *model.Platform) error {
	c, err := e.liveClients(ctx, p)
	if errors.Is(err, converge.ErrNoKubeconfig) {
		return nil // the stack has not created its cluster yet: nothing is being deleted in it
	}
	if err != nil {
		return err
	}
	return converge.WaitTerminating(ctx, c, e.opts.Out, op, p.Name, terminatingWait)
}
