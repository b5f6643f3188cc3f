// Package state is the shared state of a stack as Paddock reads it beside
// Pulumi: a stack's last checkpoint, Pulumi's update locks, and Paddock's own
// run journal, all kept in the backend that holds the stack, so every runner
// sharing the backend sees what another runner left. It holds what every
// backend has in common (the Store interface, Pulumi's keys, the lock and run
// record formats, the lease timing), apart from the engine that runs the
// stacks; each backend is a package of its own beneath it (filestate,
// pgstate, s3state), so one backend's driver never weighs on another's code.
// All backends use the keys Pulumi's DIY backend writes:
//
//	.pulumi/stacks/<project>/<stack>.json[.gz|.zst]   the checkpoint
//	.pulumi/locks/organization/<project>/<stack>/<id>.json   update locks
//
// gs:// and azblob:// buckets and the Pulumi Cloud have no reader here: no
// server for those buckets runs on loopback in the tests, so a reader would
// go untested, and the Cloud keeps its state behind its API. The fast paths
// fall back to Pulumi's refresh there, saying why, and their run journal
// stays on the runner ($PADDOCK_HOME/runs).
package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Store is the backend of a stack as Paddock reads and writes it.
type Store interface {
	// Checkpoint is the stack's last checkpoint as Pulumi wrote it
	// (decompressed JSON) and where it is, for messages (never a secret).
	// found is false when the stack has none yet. A backend Paddock cannot
	// read answers a *NoReaderError.
	Checkpoint(ctx context.Context, project, stack string) (data []byte, where string, found bool, err error)
	// Locks lists Pulumi's update locks of the stack (Lock.File is the key).
	Locks(ctx context.Context, project, stack string) ([]Lock, error)
	// AddLock writes an update lock in Pulumi's format and returns its key.
	AddLock(ctx context.Context, project, stack string, body []byte) (string, error)
	RemoveLock(ctx context.Context, key string) error
	Journal
	Close()
}

// Journal keeps one record per run of a stack. Each record is a lease:
// the run renews it every LeaseRenewEvery, and a record not renewed for
// LeaseExpiry belongs to a run that ended without finishing.
type Journal interface {
	// PutRun stores a new record and returns its key.
	PutRun(ctx context.Context, project, stack, id string, body []byte) (string, error)
	// RenewRun renews the record's lease; a record gone is an error.
	RenewRun(ctx context.Context, key string) error
	ListRuns(ctx context.Context, project, stack string) ([]StoredRun, error)
	DeleteRun(ctx context.Context, key string) error
	// JournalWhere names where the records are, for messages.
	JournalWhere(project, stack string) string
}

// StoredRun is one record as the journal holds it.
type StoredRun struct {
	Key  string
	Body []byte
	// Age is how long ago the lease was last renewed, by the journal's own
	// clock (the database's for PostgreSQL), so runners' clocks never meet.
	Age time.Duration
}

// Lease timing: variables so tests can shorten them.
var (
	LeaseRenewEvery = 10 * time.Second
	LeaseExpiry     = 60 * time.Second
)

// NoReaderError is a backend whose state Paddock does not read itself.
type NoReaderError struct{ Reason string }

func (n *NoReaderError) Error() string { return n.Reason }

// Timeout bounds one exchange with the backend.
const Timeout = 30 * time.Second

// CheckpointKey is where Pulumi's DIY backend keeps a stack's checkpoint.
func CheckpointKey(project, stack string) string {
	return path.Join(".pulumi", "stacks", project, stack) + ".json"
}

// LockPrefix is where Pulumi's DIY backend keeps a stack's update locks.
func LockPrefix(project, stack string) string {
	return path.Join(".pulumi", "locks", "organization", project, stack) + "/"
}

// CheckpointVariants are the keys Pulumi may have written a stack's
// checkpoint under; it reads the most recently written one.
func CheckpointVariants(project, stack string) []string {
	plain := CheckpointKey(project, stack)
	return []string{plain, plain + ".gz", plain + ".zst"}
}

// DecodeCompressed undoes the compression the key's suffix names.
func DecodeCompressed(key string, data []byte) ([]byte, error) {
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

// BackendKey names a backend's directory on this runner (its run records
// before the journal moved into the backend, its cache of stored forms): its
// scheme, readable, and a hash of its URL (which may hold credentials, and
// any character).
func BackendKey(backend string) string {
	scheme := "backend"
	if u, err := url.Parse(backend); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	sum := sha256.Sum256([]byte(strings.TrimRight(backend, "/")))
	return scheme + "-" + hex.EncodeToString(sum[:8])
}
