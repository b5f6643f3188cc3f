package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
)

// This file is the run journal as the engine keeps it. Up and destroy save
// the state once, at the end (final checkpoints), so a run that dies midway
// leaves objects the state does not record. Before changing anything each
// run writes a record of its own in the backend that holds the stack
// (package state: beside the state on file://, table paddock_runs on
// postgres://, objects under .paddock/runs/ on s3://, on this runner for
// backends Paddock does not read) and removes it when it succeeds: a record
// whose run is gone is a run that did not finish, and the next up or
// destroy, on any runner sharing the backend, cleans up after it
// (prune.go). One record per run, never one per stack, so a run waiting for
// the lock cannot overwrite (and hide) the record of one that died.
//
// A record is a lease (state.Run): its run renews it every
// state.LeaseRenewEvery. On the host that wrote it the run's process is
// asked; elsewhere a record not renewed for state.LeaseExpiry is dead, so no
// record is alive forever.

// DeadRun is an up or destroy of a stack whose process ended without
// finishing: it may have created or deleted objects the state does not
// record (the state is saved at the end of a run).
type DeadRun struct {
	Op      string // "up" or "destroy"
	PID     int
	Host    string
	Started time.Time
	// Damaged says why the record could not be read ("" when it could); its
	// other fields are then unknown. It is taken for dead: a record is
	// written whole, so no live run is writing it.
	Damaged string
	// Declared are the objects the run's spec declared: what it may have
	// created.
	Declared []ObjectRef

	key string
}

func (d DeadRun) String() string {
	if d.Damaged != "" {
		return fmt.Sprintf("damaged record %s (%s)", d.key, d.Damaged)
	}
	return fmt.Sprintf("%s by pid %d on %s, started %s", d.Op, d.PID, d.Host, d.Started.Local().Format(time.RFC3339))
}

// runRecord is one run's record in the journal (its stored body,
// state.Run) and what the engine knows of it beside: its key, the age of its
// lease as last read, the journal that holds it, and its heartbeat.
type runRecord struct {
	state.Run

	key     string
	age     time.Duration // since the lease was last renewed
	journal state.Journal
	// lease is this process's hold on its own record (nil on a record
	// read back): every write of the run asks it first (check).
	lease *state.Lease
	// token is the run's fence token on a backend that checks one.
	token string
	// ended is set once end removed the record: the run then holds no
	// lease that could lapse (no other runner can take a run without a
	// record for dead), and what it still does (an up's repair, under the
	// stack's lock) is not refused for the time it takes.
	ended atomic.Bool
}

// runsDir is the journal directory of stack name on a file backend (or on
// this runner, for a backend Paddock does not read); "" on PostgreSQL.
func (e *Engine) runsDir(name string) (string, error) {
	s, err := e.store()
	if err != nil {
		return "", err
	}
	switch f := s.(type) {
	case *filestate.Store:
		return f.RunsDir(e.stackRef(name)), nil
	case *filestate.LocalJournal:
		return f.RunsDir(e.stackRef(name)), nil
	}
	return "", nil
}

// beginRun writes the record of this process's op on stack name, declaring
// the objects of p's spec it may create (nil p: none, as for a destroy), and
// keeps its lease renewed until end or abandon.
func (e *Engine) beginRun(op, name string, p *model.Platform) (*runRecord, error) {
	if p == nil {
		return e.beginRecord(op, name, "", nil)
	}
	declared, err := declaredObjects(p)
	if err != nil {
		return nil, err
	}
	return e.beginRecord(op, name, p.Name, declared)
}

// beginRecord is beginRun once the declared objects are known.
func (e *Engine) beginRecord(op, name, platform string, declared []ObjectRef) (*runRecord, error) {
	s, err := e.store()
	if err != nil {
		return nil, err
	}
	r := &runRecord{Run: state.Run{Op: op, Stack: name, Platform: platform, PID: os.Getpid(), Host: state.Hostname(), HostID: state.HostID(), Started: time.Now(), Declared: declared}, journal: s}
	if t, ok := state.ProcessStart(r.PID); ok {
		r.ProcessStart = t
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s-%s-%d-%d", op, r.Host, r.PID, r.Started.UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	// The lease counts from before the write: others may count from the
	// moment it lands.
	written := time.Now()
	if r.key, err = s.PutRun(ctx, project, stack, id, b); err != nil {
		return nil, err
	}
	r.token = newFenceToken()
	cli := e.cli()
	cli.reset() // a run before this one may have lapsed: this one holds its own lease
	// A lapse kills the run's Pulumi CLI at once, from the heartbeat: the
	// run's own goroutine may be waiting on that very CLI.
	r.lease = state.Heartbeat(s, r.key, e.opts.Out, op, name, written, cli.lapse)
	return r, nil
}

// abandon stops renewing the record and keeps it: the run failed, and the
// next run takes it for dead once its lease expires (or this process ends).
func (r *runRecord) abandon() {
	if r != nil {
		r.lease.Stop()
	}
}

// check is nil while the run holds its lease; once it lapsed, the error
// every write of the run refuses with (state.LapsedError).
func (r *runRecord) check() error {
	if r == nil || r.ended.Load() {
		return nil
	}
	return r.lease.Check()
}

// end removes the record: the run finished, or never started. A run whose
// lease lapsed keeps it: another runner may have taken it for dead, and the
// record is what tells that runner what the run may have created.
func (r *runRecord) end() error {
	if r == nil {
		return nil
	}
	if err := r.check(); err != nil {
		r.abandon()
		return err
	}
	r.abandon()
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	if err := r.journal.DeleteRun(ctx, r.key); err != nil {
		return err
	}
	r.ended.Store(true)
	return nil
}

// alive reports whether the run still goes on (state.Run.Alive), by its
// lease as the journal was last read.
func (r *runRecord) alive() bool { return r.Alive(r.age) }

// readRuns reads every record of stack name: the readable ones, and the
// damaged ones (as dead runs that say why).
func (e *Engine) readRuns(name string) ([]*runRecord, []DeadRun, error) {
	s, err := e.store()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	stored, err := s.ListRuns(ctx, project, stack)
	if err != nil {
		return nil, nil, err
	}
	var recs []*runRecord
	var damaged []DeadRun
	for _, sr := range stored {
		var r runRecord
		err := json.Unmarshal(sr.Body, &r)
		if err == nil && (r.Op == "" || r.PID <= 0 || r.Host == "") {
			err = errors.New("it names no operation, pid or host")
		}
		if err != nil {
			damaged = append(damaged, DeadRun{Damaged: err.Error(), key: sr.Key})
			continue
		}
		r.key, r.age, r.journal = sr.Key, sr.Age, s
		recs = append(recs, &r)
	}
	return recs, damaged, nil
}

// deadRuns lists the runs of stack name that ended without finishing, oldest
// first: those whose process is gone from this host, those of other hosts
// whose lease expired, and damaged records.
func (e *Engine) deadRuns(name string) ([]DeadRun, error) {
	recs, damaged, err := e.readRuns(name)
	if err != nil {
		return nil, err
	}
	var out []DeadRun
	for _, r := range recs {
		if r.alive() {
			continue
		}
		out = append(out, DeadRun{Op: r.Op, PID: r.PID, Host: r.Host, Started: r.Started, Declared: r.Declared, key: r.key})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return append(out, damaged...), nil
}

// otherLiveRuns lists the records of stack name, other than self, whose run
// still goes on.
func (e *Engine) otherLiveRuns(name string, self *runRecord) ([]*runRecord, error) {
	recs, _, err := e.readRuns(name)
	if err != nil {
		return nil, err
	}
	var out []*runRecord
	for _, r := range recs {
		if self != nil && r.key == self.key {
			continue
		}
		if r.alive() {
			out = append(out, r)
		}
	}
	return out, nil
}

// clearRuns removes the records of dead runs once what they left is dealt with.
func (e *Engine) clearRuns(dead []DeadRun) error {
	s, err := e.store()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	for _, d := range dead {
		if err := s.DeleteRun(ctx, d.key); err != nil {
			return fmt.Errorf("removing the record of a dead run: %w", err)
		}
	}
	return nil
}

// sayDeadRuns is the one line an up or destroy prints after dead runs.
func sayDeadRuns(op, name string, dead []DeadRun) string {
	first := dead[0].String()
	more := ""
	if len(dead) > 1 {
		more = fmt.Sprintf(" and %d more", len(dead)-1)
	}
	then := "converging, then deleting what it created that no state holds and the spec does not declare"
	if op == "destroy" {
		then = "destroying, then deleting what it created that no state holds"
	}
	return fmt.Sprintf("paddock %s: a run of stack %q did not finish (%s%s): %s", op, name, first, more, then)
}

// declaredObjects names every Kubernetes object p's spec declares.
func declaredObjects(p *model.Platform) ([]ObjectRef, error) {
	groups, err := manifests.Platform(p)
	if err != nil {
		return nil, fmt.Errorf("listing the objects of platform %q: %w", p.Name, err)
	}
	var out []ObjectRef
	for _, g := range groups {
		for _, o := range g.Objects {
			out = append(out, ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return out, nil
}
