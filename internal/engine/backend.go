package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/paddock-platform/paddock/internal/paths"
)

// This file is the backend as Paddock reads it beside Pulumi: a stack's last
// checkpoint, Pulumi's update locks, and Paddock's own run journal, all kept
// in the backend that holds the stack, so every runner sharing the backend
// sees what another runner left. The file backend is here; PostgreSQL is in
// backendpg.go, S3 buckets in backends3.go (tested against SeaweedFS's S3
// gateway). All use the keys Pulumi's DIY backend writes:
//
//	.pulumi/stacks/<project>/<stack>.json[.gz|.zst]   the checkpoint
//	.pulumi/locks/organization/<project>/<stack>/<id>.json   update locks
//
// gs:// and azblob:// buckets and the Pulumi Cloud have no reader here: no
// server for those buckets runs on loopback in the tests, so a reader would
// go untested, and the Cloud keeps its state behind its API. The fast paths
// fall back to Pulumi's refresh there, saying why, and their run journal
// stays on the runner ($PADDOCK_HOME/runs).

// stateStore is the backend of a stack as Paddock reads and writes it.
type stateStore interface {
	// checkpoint is the stack's last checkpoint as Pulumi wrote it
	// (decompressed JSON) and where it is, for messages (never a secret).
	// found is false when the stack has none yet. A backend Paddock cannot
	// read answers a *noReaderError.
	checkpoint(ctx context.Context, project, stack string) (data []byte, where string, found bool, err error)
	// locks lists Pulumi's update locks of the stack (Lock.File is the key).
	locks(ctx context.Context, project, stack string) ([]Lock, error)
	// addLock writes an update lock in Pulumi's format and returns its key.
	addLock(ctx context.Context, project, stack string, body []byte) (string, error)
	removeLock(ctx context.Context, key string) error
	runJournal
	close()
}

// runJournal keeps one record per run of a stack. Each record is a lease:
// the run renews it every leaseRenewEvery, and a record not renewed for
// leaseExpiry belongs to a run that ended without finishing.
type runJournal interface {
	// putRun stores a new record and returns its key.
	putRun(ctx context.Context, project, stack, id string, body []byte) (string, error)
	// renewRun renews the record's lease; a record gone is an error.
	renewRun(ctx context.Context, key string) error
	listRuns(ctx context.Context, project, stack string) ([]storedRun, error)
	deleteRun(ctx context.Context, key string) error
	// journalWhere names where the records are, for messages.
	journalWhere(project, stack string) string
}

// storedRun is one record as the journal holds it.
type storedRun struct {
	key  string
	body []byte
	// age is how long ago the lease was last renewed, by the journal's own
	// clock (the database's for PostgreSQL), so runners' clocks never meet.
	age time.Duration
}

// Lease timing: variables so tests can shorten them.
var (
	leaseRenewEvery = 10 * time.Second
	leaseExpiry     = 60 * time.Second
)

// noReaderError is a backend whose state Paddock does not read itself.
type noReaderError struct{ reason string }

func (n *noReaderError) Error() string { return n.reason }

// storeTimeout bounds one exchange with the backend.
const storeTimeout = 30 * time.Second

// Pulumi's keys in a DIY backend.
func checkpointKey(project, stack string) string {
	return path.Join(".pulumi", "stacks", project, stack) + ".json"
}

func lockPrefix(project, stack string) string {
	return path.Join(".pulumi", "locks", "organization", project, stack) + "/"
}

// checkpointVariants are the keys Pulumi may have written a stack's
// checkpoint under; it reads the most recently written one.
func checkpointVariants(project, stack string) []string {
	plain := checkpointKey(project, stack)
	return []string{plain, plain + ".gz", plain + ".zst"}
}

// decodeCompressed undoes the compression the key's suffix names.
func decodeCompressed(key string, data []byte) ([]byte, error) {
	switch {
	case strings.HasSuffix(key, ".gz"):
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		return io.ReadAll(gz)
	case strings.HasSuffix(key, ".zst"):
		dec, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer dec.Close()
		return dec.DecodeAll(data, nil)
	}
	return data, nil
}

// openStore opens the store of backend URL backend. A backend without a
// reader still gets a journal, on this runner.
func openStore(ctx context.Context, backend string) (stateStore, error) {
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
	return filepath.Join(paths.Home(), "runs", backendKey(backend))
}

func (f *fileStore) close() {}

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

func (f *fileStore) checkpoint(_ context.Context, project, stack string) ([]byte, string, bool, error) {
	// Like Pulumi: of the variants present, the most recently written.
	best, bestTime := "", time.Time{}
	for _, key := range checkpointVariants(project, stack) {
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
	data, err := decodeCompressed(best, raw)
	return data, file, true, err
}

func (f *fileStore) locks(_ context.Context, project, stack string) ([]Lock, error) {
	// .pulumi/locks/<org>/<project>/<stack>/<lock id>.json (project-scoped layout).
	files, _ := filepath.Glob(filepath.Join(f.root, ".pulumi", "locks", "*", project, stack, "*.json"))
	var out []Lock
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // released meanwhile
		}
		l, ok := parseLock(b)
		if !ok {
			continue
		}
		l.File = file
		out = append(out, l)
	}
	return out, nil
}

func (f *fileStore) addLock(_ context.Context, project, stack string, body []byte) (string, error) {
	dir := filepath.Join(f.root, filepath.FromSlash(lockPrefix(project, stack)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the stack's lock directory: %w", err)
	}
	file := filepath.Join(dir, newLockID()+".json")
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

func (f *fileStore) removeLock(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_ = os.Remove(key + ".attrs")
	return nil
}

func (f *fileStore) runsDir(project, stack string) string {
	return filepath.Join(f.runsRoot, url.PathEscape(project), url.PathEscape(stack))
}

func (f *fileStore) journalWhere(project, stack string) string { return f.runsDir(project, stack) }

func (f *fileStore) putRun(_ context.Context, project, stack, id string, body []byte) (string, error) {
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
func (f *fileStore) renewRun(_ context.Context, key string) error {
	now := time.Now()
	return os.Chtimes(key, now, now)
}

func (f *fileStore) listRuns(_ context.Context, project, stack string) ([]storedRun, error) {
	out, err := listRunFiles(f.runsDir(project, stack))
	if err != nil || f.legacyRoot == "" {
		return out, err
	}
	legacy, err := listRunFiles(filepath.Join(f.legacyRoot, url.PathEscape(stack)))
	return append(out, legacy...), err
}

// listRunFiles reads the records of one journal directory.
func listRunFiles(dir string) ([]storedRun, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run journal %s: %w", dir, err)
	}
	var out []storedRun
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
		out = append(out, storedRun{key: file, body: b, age: time.Since(st.ModTime())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

func (f *fileStore) deleteRun(_ context.Context, key string) error {
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

func (l *localJournalStore) checkpoint(context.Context, string, string) ([]byte, string, bool, error) {
	return nil, "", false, &noReaderError{l.reason}
}

func (l *localJournalStore) locks(context.Context, string, string) ([]Lock, error) { return nil, nil }

func (l *localJournalStore) addLock(context.Context, string, string, []byte) (string, error) {
	return "", &noReaderError{l.reason}
}

func (l *localJournalStore) removeLock(context.Context, string) error {
	return &noReaderError{l.reason}
}

// store is the engine's store of its backend, opened once.
func (e *Engine) store() (stateStore, error) {
	backend, err := e.backendURL()
	if err != nil {
		return nil, err
	}
	if s, ok := e.stores[backend]; ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s, err := openStore(ctx, backend)
	if err != nil {
		return nil, err
	}
	if e.stores == nil {
		e.stores = map[string]stateStore{}
	}
	e.stores[backend] = s
	return s, nil
}

// Close releases the engine's connections to its backends.
func (e *Engine) Close() {
	for k, s := range e.stores {
		s.close()
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
// *noReaderError then). A checkpoint that does not decode is a
// *CorruptStateError.
func (e *Engine) readStackState(name string) (data []byte, where string, err error) {
	s, err := e.store()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	project, stack := e.stackRef(name)
	data, where, found, err := s.checkpoint(ctx, project, stack)
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
