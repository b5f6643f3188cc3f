// Package filestate is Pulumi's file:// DIY backend as Paddock reads it: the
// checkpoint and update locks as files under the backend's directory, and
// the run journal as one file per run beside them. It also keeps the journal
// of a backend Paddock does not read, on this runner (LocalJournal).
package filestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/state"
)

// Store is a file:// backend: the state under root, the journal beside
// it under root/.paddock/runs, where Pulumi never looks.
type Store struct {
	root     string
	runsRoot string
	// legacyRoot is where runs before the journal moved into the backend
	// kept their records ($PADDOCK_HOME/runs/<backend>/<stack>): read, so a
	// run that died before an upgrade is still found.
	legacyRoot string
}

// Open is the store of a file:// backend, u being backend parsed.
func Open(u *url.URL, backend string) *Store {
	root := u.Path
	if u.Host != "" && u.Host != "localhost" {
		root = filepath.Join(u.Host, u.Path)
	}
	return &Store{root: root, runsRoot: filepath.Join(root, ".paddock", "runs"), legacyRoot: LegacyRunsRoot(backend)}
}

// OnRunner is backend's journal on this runner ($PADDOCK_HOME/runs/<backend>):
// where a backend Paddock does not read keeps its records, and where a bucket
// kept them before Paddock read buckets. Without a root it reads no
// checkpoint or locks.
func OnRunner(backend string) *Store {
	return &Store{runsRoot: LegacyRunsRoot(backend), legacyRoot: LegacyRunsRoot(backend)}
}

// LegacyRunsRoot is this runner's journal directory for backend.
func LegacyRunsRoot(backend string) string {
	return filepath.Join(paths.Home(), "runs", state.BackendKey(backend))
}

// RunsRoot is the directory that holds the journal's records.
func (f *Store) RunsRoot() string { return f.runsRoot }

func (f *Store) Close() {}

// RepairSidecars removes the metadata sidecars (NAME.attrs) of the state's
// stacks, locks and meta.yaml that do not parse, and returns their paths. The
// file backend writes each blob atomically (a temporary file, then a rename)
// but its sidecar in place (truncate, then write): a run killed in between
// leaves an empty sidecar, and every later read of that blob fails with "EOF"
// although the blob itself is whole. A sidecar holds only the blob's content
// type and checksum, and a blob without one reads as it is.
func (f *Store) RepairSidecars() []string {
	if f.root == "" {
		return nil
	}
	base := filepath.Join(f.root, ".pulumi")
	var found []string
	for _, pattern := range []string{
		filepath.Join(base, "*.attrs"),
		filepath.Join(base, "stacks", "*.attrs"),
		filepath.Join(base, "stacks", "*", "*.attrs"),
		filepath.Join(base, "locks", "*", "*", "*", "*.attrs"),
	} {
		m, _ := filepath.Glob(pattern)
		found = append(found, m...)
	}
	var removed []string
	for _, p := range found {
		b, err := os.ReadFile(p)
		if err != nil || json.Valid(b) {
			continue
		}
		if err := os.Remove(p); err == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

func (f *Store) Checkpoint(_ context.Context, project, stack string) ([]byte, string, bool, error) {
	// Like Pulumi: of the variants present, the most recently written.
	best := f.latest(project, stack)
	if best == "" {
		return nil, "", false, nil
	}
	file := f.file(best)
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, file, false, err
	}
	data, err := state.DecodeCompressed(best, raw)
	return data, file, true, err
}

func (f *Store) Locks(_ context.Context, project, stack string) ([]state.Lock, error) {
	// .pulumi/locks/<org>/<project>/<stack>/<lock id>.json (project-scoped layout).
	files, _ := filepath.Glob(filepath.Join(f.root, ".pulumi", "locks", "*", project, stack, "*.json"))
	var out []state.Lock
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // released meanwhile
		}
		l, ok := state.ParseLock(b)
		if !ok {
			continue
		}
		l.File = file
		out = append(out, l)
	}
	return out, nil
}

func (f *Store) AddLock(_ context.Context, project, stack string, body []byte) (string, error) {
	dir := filepath.Join(f.root, filepath.FromSlash(state.LockPrefix(project, stack)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the stack's lock directory: %w", err)
	}
	file := filepath.Join(dir, state.NewLockID()+".json")
	h, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("writing the stack's lock: %w", err)
	}
	_, werr := h.Write(body)
	if cerr := h.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(file)
		return "", fmt.Errorf("writing the stack's lock: %w", werr)
	}
	return file, nil
}

func (f *Store) RemoveLock(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_ = os.Remove(key + ".attrs")
	return nil
}

// RunsDir is the directory of the stack's records.
func (f *Store) RunsDir(project, stack string) string {
	return filepath.Join(f.runsRoot, url.PathEscape(project), url.PathEscape(stack))
}

func (f *Store) JournalWhere(project, stack string) string { return f.RunsDir(project, stack) }

func (f *Store) PutRun(_ context.Context, project, stack, id string, body []byte) (string, error) {
	dir := f.RunsDir(project, stack)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the run journal %s: %w", dir, err)
	}
	file := filepath.Join(dir, id+".json")
	// Written aside and renamed in, so a record is never seen half written.
	tmp := filepath.Join(dir, "."+id+".tmp")
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing the run record: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing the run record: %w", err)
	}
	return file, nil
}

// RenewRun renews a file record's lease by its modification time: no
// rewrite, so a reader never meets it half written.
func (f *Store) RenewRun(_ context.Context, key string) error {
	now := time.Now()
	err := os.Chtimes(key, now, now)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the run record %s is gone: %w", key, state.ErrRunGone)
	}
	return err
}

func (f *Store) ListRuns(_ context.Context, project, stack string) ([]state.StoredRun, error) {
	out, err := listRunFiles(f.RunsDir(project, stack))
	if err != nil || f.legacyRoot == "" {
		return out, err
	}
	legacy, err := listRunFiles(filepath.Join(f.legacyRoot, url.PathEscape(stack)))
	return append(out, legacy...), err
}

// listRunFiles reads the records of one journal directory.
func listRunFiles(dir string) ([]state.StoredRun, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run journal %s: %w", dir, err)
	}
	var out []state.StoredRun
	for _, ent := range entries {
		if ent.IsDir() || !strings.HasSuffix(ent.Name(), ".json") || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, ent.Name())
		st, err := os.Stat(file)
		if err != nil {
			continue // its run ended meanwhile
		}
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			b = nil // read as damaged
		}
		out = append(out, state.StoredRun{Key: file, Body: b, Age: time.Since(st.ModTime())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (f *Store) DeleteRun(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the run record %s: %w", key, err)
	}
	return nil
}

// LocalJournal is a backend Paddock does not read (a bucket, the Pulumi
// Cloud): no checkpoint or locks, and a journal on this runner only.
type LocalJournal struct {
	Store
	reason string
}

// NewLocalJournal is backend's journal on this runner; reason says why
// Paddock does not read the backend itself, for messages.
func NewLocalJournal(backend, reason string) *LocalJournal {
	return &LocalJournal{Store: *OnRunner(backend), reason: reason}
}

func (l *LocalJournal) Checkpoint(context.Context, string, string) ([]byte, string, bool, error) {
	return nil, "", false, &state.NoReaderError{Reason: l.reason}
}

func (l *LocalJournal) Locks(context.Context, string, string) ([]state.Lock, error) {
	return nil, nil
}

func (l *LocalJournal) AddLock(context.Context, string, string, []byte) (string, error) {
	return "", &state.NoReaderError{Reason: l.reason}
}

func (l *LocalJournal) RemoveLock(context.Context, string) error {
	return &state.NoReaderError{Reason: l.reason}
}

func (l *LocalJournal) RawCheckpoint(context.Context, string, string) ([]byte, state.CheckpointVersion, error) {
	return nil, state.CheckpointVersion{}, &state.NoReaderError{Reason: l.reason}
}

func (l *LocalJournal) SwapCheckpoint(context.Context, string, string, string, []byte, state.CheckpointVersion) (state.CheckpointVersion, error) {
	return state.CheckpointVersion{}, &state.NoReaderError{Reason: l.reason}
}

func (l *LocalJournal) PutUpdateFile(context.Context, string, string, string, string, []byte) error {
	return &state.NoReaderError{Reason: l.reason}
}
