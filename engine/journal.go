package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/procfs"
	"github.com/paddock-platform/paddock/manifests"
	"github.com/paddock-platform/paddock/model"
)

// This file is the run journal. Up and destroy save the state once, at the
// end (final checkpoints), so a run that dies midway leaves objects the state
// does not record. Before changing anything each run writes a record of its
// own under $PADDOCK_HOME/runs/<backend>/<stack>/ and removes it when it
// succeeds: a record whose process is gone is a run that did not finish, and
// the next up or destroy cleans up after it (prune.go). One record per run,
// never one per stack, so a run waiting for the lock cannot overwrite (and
// hide) the record of one that died.

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
	// written whole (renamed into place), so no live run is writing it.
	Damaged string
	// Declared are the objects the run's spec declared: what it may have
	// created.
	Declared []ObjectRef

	file string
}

func (d DeadRun) String() string {
	if d.Damaged != "" {
		return fmt.Sprintf("damaged record %s (%s)", d.file, d.Damaged)
	}
	return fmt.Sprintf("%s by pid %d on %s, started %s", d.Op, d.PID, d.Host, d.Started.Local().Format(time.RFC3339))
}

// runRecord is one run's file in the journal.
type runRecord struct {
	Op       string    `json:"op"`
	Stack    string    `json:"stack"`
	Platform string    `json:"platform,omitempty"`
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Started  time.Time `json:"started"`
	// ProcessStart is when process PID started: a pid reused by a later
	// process starts at another time.
	ProcessStart time.Time   `json:"processStart,omitzero"`
	Declared     []ObjectRef `json:"declared,omitempty"`

	file string
}

// runsDir is the journal directory of stack name on the engine's backend.
func (e *Engine) runsDir(name string) (string, error) {
	backend, err := e.backendURL()
	if err != nil {
		return "", err
	}
	return filepath.Join(paths.Home(), "runs", backendKey(backend), url.PathEscape(name)), nil
}

// backendKey names a backend's journal directory: its scheme, readable, and
// a hash of its URL (which may hold credentials, and any character).
func backendKey(backend string) string {
	scheme := "backend"
	if u, err := url.Parse(backend); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	sum := sha256.Sum256([]byte(strings.TrimRight(backend, "/")))
	return scheme + "-" + hex.EncodeToString(sum[:8])
}

// beginRun writes the record of this process's op on stack name, declaring
// the objects of p's spec it may create (nil p: none, as for a destroy).
func (e *Engine) beginRun(op, name string, p *model.Platform) (*runRecord, error) {
	dir, err := e.runsDir(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the run journal %s: %w", dir, err)
	}
	r := &runRecord{Op: op, Stack: name, PID: os.Getpid(), Host: hostname(), Started: time.Now()}
	if t, ok := processStart(r.PID); ok {
		r.ProcessStart = t
	}
	if p != nil {
		r.Platform = p.Name
		if r.Declared, err = declaredObjects(p); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s-%s-%d-%d", op, r.Host, r.PID, r.Started.UnixNano())
	r.file = filepath.Join(dir, base+".json")
	// Written aside and renamed in, so a record is never seen half written.
	tmp := filepath.Join(dir, "."+base+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("writing the run record: %w", err)
	}
	if err := os.Rename(tmp, r.file); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("writing the run record: %w", err)
	}
	return r, nil
}

// end removes the record: the run finished, or never started.
func (r *runRecord) end() error {
	if r == nil {
		return nil
	}
	if err := os.Remove(r.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the run record %s: %w", r.file, err)
	}
	return nil
}

// alive reports whether the run's process still runs. A record of another
// host is never taken for dead: its process cannot be seen from here.
func (r *runRecord) alive() bool {
	if r.Host != hostname() {
		return true
	}
	if r.PID <= 0 {
		return false
	}
	if err := syscall.Kill(r.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := procfs.ReadStat(r.PID)
	if err != nil {
		// No /proc to ask: the process exists, so it counts as the run's.
		return !errors.Is(err, procfs.ErrNoProcess)
	}
	if st.Exited() {
		return false // killed, and not yet reaped by its parent
	}
	started, err := st.StartTime()
	if err != nil {
		return true
	}
	if !r.ProcessStart.IsZero() {
		// Boot time is read in whole seconds: allow for it.
		d := started.Sub(r.ProcessStart)
		return d > -2*time.Second && d < 2*time.Second
	}
	return !started.After(r.Started.Add(10 * time.Second))
}

// readRuns reads every record of stack name: the readable ones, and the
// damaged ones (as dead runs that say why).
func (e *Engine) readRuns(name string) ([]*runRecord, []DeadRun, error) {
	dir, err := e.runsDir(name)
	if err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the run journal %s: %w", dir, err)
	}
	var recs []*runRecord
	var damaged []DeadRun
	for _, ent := range entries {
		if ent.IsDir() || !strings.HasSuffix(ent.Name(), ".json") || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, ent.Name())
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its run ended meanwhile
		}
		var r runRecord
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil && (r.Op == "" || r.PID <= 0 || r.Host == "") {
			err = errors.New("it names no operation, pid or host")
		}
		if err != nil {
			damaged = append(damaged, DeadRun{Damaged: err.Error(), file: file})
			continue
		}
		r.file = file
		recs = append(recs, &r)
	}
	return recs, damaged, nil
}

// deadRuns lists the runs of stack name that ended without finishing, oldest
// first: those whose process is gone from this host, and damaged records.
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
		out = append(out, DeadRun{Op: r.Op, PID: r.PID, Host: r.Host, Started: r.Started, Declared: r.Declared, file: r.file})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return append(out, damaged...), nil
}

// otherLiveRuns lists the records of stack name, other than self, whose
// process still runs (or runs on another host).
func (e *Engine) otherLiveRuns(name string, self *runRecord) ([]*runRecord, error) {
	recs, _, err := e.readRuns(name)
	if err != nil {
		return nil, err
	}
	var out []*runRecord
	for _, r := range recs {
		if self != nil && r.file == self.file {
			continue
		}
		if r.alive() {
			out = append(out, r)
		}
	}
	return out, nil
}

// clearRuns removes the records of dead runs once what they left is dealt with.
func clearRuns(dead []DeadRun) error {
	for _, d := range dead {
		if err := os.Remove(d.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the record of a dead run %s: %w", d.file, err)
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
