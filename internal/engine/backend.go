package engine

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

// This file is the engine's side of its backend (package state): the store
// of the backend URL, opened once per engine, and the stack's last checkpoint
// read through it. The file backend is here; PostgreSQL is in backendpg.go,
// S3 buckets in backends3.go (tested against SeaweedFS's S3 gateway).

// openStore opens the store of backend URL backend. A backend without a
// reader still gets a journal, on this runner.
func openStore(ctx context.Context, backend string) (state.Store, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, fmt.Errorf("the backend URL does not parse")
	}
	switch u.Scheme {
	case "file":
		root := u.Path
		if u.Host != "" && u.Host != "localhost" {
			root = filepath.Join(u.Host, u.Path)
		}
		return &fileStore{root: root, runsRoot: filepath.Join(root, ".paddock", "runs"), legacyRoot: legacyRunsRoot(backend)}, nil
	case "postgres", "postgresql":
		return openPostgresStore(ctx, backend)
	case "s3":
		return openS3Store(ctx, backend)
	}
	reason := fmt.Sprintf("Paddock reads the state of file://, postgres:// and s3:// backends only; on %s:// it falls back to Pulumi's refresh (no reader for its buckets yet)", u.Scheme)
	if u.Scheme == "https" || u.Scheme == "http" {
		reason = "the Pulumi Cloud keeps the state behind its API, which only the engine reads; Paddock falls back to Pulumi's refresh"
	}
	return &localJournalStore{
		fileStore: fileStore{runsRoot: legacyRunsRoot(backend), legacyRoot: legacyRunsRoot(backend)},
		reason:    reason,
	}, nil
}

// fileStore is a file:// backend: the state under root, the journal beside
// it under root/.paddock/runs, where Pulumi never looks.
type fileStore struct {
	root     string
	runsRoot string
	// legacyRoot is where runs before the journal moved into the backend
	// kept their records ($PADDOCK_HOME/runs/<backend>/<stack>): read, so a
	// run that died before an upgrade is still found.
	legacyRoot string
}

// legacyRunsRoot is this runner's journal directory for backend.
func legacyRunsRoot(backend string) string {
	return filepath.Join(paths.Home(), "runs", state.BackendKey(backend))
}

func (f *fileStore) Close() {}

// repairSidecars removes the metadata sidecars (NAME.attrs) of the state's
// stacks, locks and meta.yaml that do not parse, and returns their paths. The
// file backend writes each blob atomically (a temporary file, then a rename)
// but its sidecar in place (truncate, then write): a run killed in between
// leaves an empty sidecar, and every later read of that blob fails with "EOF"
// although the blob itself is whole. A sidecar holds only the blob's content
// type and checksum, and a blob without one reads as it is.
func (f *fileStore) repairSidecars() []string {
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

func (f *fileStore) Checkpoint(_ context.Context, project, stack string) ([]byte, string, bool, error) {
	// Like Pulumi: of the variants present, the most recently written.
	best, bestTime := "", time.Time{}
	for _, key := range state.CheckpointVariants(project, stack) {
		st, err := os.Stat(filepath.Join(f.root, filepath.FromSlash(key)))
		if err != nil {
			continue
		}
		if best == "" || !st.ModTime().Before(bestTime) {
			best, bestTime = key, st.ModTime()
		}
	}
	if best == "" {
		return nil, "", false, nil
	}
	file := filepath.Join(f.root, filepath.FromSlash(best))
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, file, false, err
	}
	data, err := state.DecodeCompressed(best, raw)
	return data, file, true, err
}

func (f *fileStore) Locks(_ context.Context, project, stack string) ([]state.Lock, error) {
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

func (f *fileStore) AddLock(_ context.Context, project, stack string, body []byte) (string, error) {
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

func (f *fileStore) RemoveLock(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_ = os.Remove(key + ".attrs")
	return nil
}

func (f *fileStore) runsDir(project, stack string) string {
	return filepath.Join(f.runsRoot, url.PathEscape(project), url.PathEscape(stack))
}

func (f *fileStore) JournalWhere(project, stack string) string { return f.runsDir(project, stack) }

func (f *fileStore) PutRun(_ context.Context, project, stack, id string, body []byte) (string, error) {
	dir := f.runsDir(project, stack)
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

// renewRun renews a file record's lease by its modification time: no
// rewrite, so a reader never meets it half written.
func (f *fileStore) RenewRun(_ context.Context, key string) error {
	now := time.Now()
	return os.Chtimes(key, now, now)
}

func (f *fileStore) ListRuns(_ context.Context, project, stack string) ([]state.StoredRun, error) {
	out, err := listRunFiles(f.runsDir(project, stack))
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

func (f *fileStore) DeleteRun(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the run record %s: %w", key, err)
	}
	return nil
}

// localJournalStore is a backend Paddock does not read (a bucket, the Pulumi
// Cloud): no checkpoint or locks, and a journal on this runner only.
type localJournalStore struct {
	fileStore
	reason string
}

func (l *localJournalStore) Checkpoint(context.Context, string, string) ([]byte, string, bool, error) {
	return nil, "", false, &state.NoReaderError{Reason: l.reason}
}

func (l *localJournalStore) Locks(context.Context, string, string) ([]state.Lock, error) {
	return nil, nil
}

func (l *localJournalStore) AddLock(context.Context, string, string, []byte) (string, error) {
	return "", &state.NoReaderError{Reason: l.reason}
}

func (l *localJournalStore) RemoveLock(context.Context, string) error {
	return &state.NoReaderError{Reason: l.reason}
}

// store is the engine's store of its backend, opened once.
func (e *Engine) store() (state.Store, error) {
	backend, err := e.backendURL()
	if err != nil {
		return nil, err
	}
	if s, ok := e.stores[backend]; ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	s, err := openStore(ctx, backend)
	if err != nil {
		return nil, err
	}
	if e.stores == nil {
		e.stores = map[string]state.Store{}
	}
	e.stores[backend] = s
	return s, nil
}

// Close releases the engine's connections to its backends.
func (e *Engine) Close() {
	for k, s := range e.stores {
		s.Close()
		delete(e.stores, k)
	}
}

// projectName is the Pulumi project the engine's stacks belong to.
func (e *Engine) projectName() string {
	if name := e.projectFileName(); name != "" {
		return name
	}
	return ProjectName
}

// readStackState is the last checkpoint of stack name: nil data when the
// stack has none yet or the backend is one Paddock does not read (err a
// *state.NoReaderError then). A checkpoint that does not decode is a
// *CorruptStateError.
func (e *Engine) readStackState(name string) (data []byte, where string, err error) {
	s, err := e.store()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	data, where, found, err := s.Checkpoint(ctx, project, stack)
	if err != nil && found {
		return nil, where, &CorruptStateError{Stack: name, File: where, Err: err}
	}
	if err != nil || !found {
		return nil, where, err
	}
	return data, where, nil
}

// stackRef is the project and bare stack name of stack name, which may be
// qualified as Pulumi's DIY backend allows (organization/project/stack).
func (e *Engine) stackRef(name string) (project, stack string) {
	parts := strings.Split(name, "/")
	if len(parts) == 3 && parts[1] != "" {
		return parts[1], parts[2]
	}
	return e.projectName(), parts[len(parts)-1]
}

// hideBackendPassword removes the backend URL's password from err: Pulumi
// quotes the URL as given in some of its errors (a database it cannot open).
func (e *Engine) hideBackendPassword(err error) error {
	if err == nil {
		return nil
	}
	backend, berr := e.backendURL()
	if berr != nil {
		return err
	}
	u, perr := url.Parse(backend)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), pw, "****"), err: err}
}

// redactedError keeps the error chain (errors.Is/As) under a message
// without the password.
type redactedError struct {
	msg string
	err error
}

func (r *redactedError) Error() string { return r.msg }
func (r *redactedError) Unwrap() error { return r.err }
