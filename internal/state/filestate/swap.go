package filestate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

// The conditional checkpoint write of a file:// backend
// (state.CheckpointSwapper). Every Paddock run that copies a checkpoint back
// takes an exclusive flock on the stack's swap lock (under the backend's
// .paddock directory, where Pulumi never looks), compares the checkpoint it
// finds with the one it last read or wrote (its key and a SHA-256 of its
// bytes), and only then keeps the old one as <key>.bak (as Pulumi does),
// writes a temporary file beside it and renames it in: a reader sees the
// old checkpoint or the new, never a part. Two runners
// sharing the directory (NFS included, where flock is a lock of the
// server's) exclude each other; a hand-run `pulumi up` takes no flock, as
// it takes no Paddock fence either.

var _ state.CheckpointSwapper = (*Store)(nil)

// latest is the key of the checkpoint variant Pulumi reads (the most
// recently written), "" when the stack has none.
func (f *Store) latest(project, stack string) string {
	best, bestTime := "", time.Time{}
	for _, key := range state.CheckpointVariants(project, stack) {
		st, err := os.Stat(f.file(key))
		if err != nil {
			continue
		}
		if best == "" || !st.ModTime().Before(bestTime) {
			best, bestTime = key, st.ModTime()
		}
	}
	return best
}

// file is the path of a key of Pulumi's under the backend's root.
func (f *Store) file(key string) string { return filepath.Join(f.root, filepath.FromSlash(key)) }

// digest is a checkpoint's tag on a file backend.
func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// read is the stack's checkpoint as stored, and its version.
func (f *Store) read(project, stack string) ([]byte, state.CheckpointVersion, error) {
	key := f.latest(project, stack)
	if key == "" {
		return nil, state.CheckpointVersion{}, nil
	}
	raw, err := os.ReadFile(f.file(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, state.CheckpointVersion{}, nil // removed meanwhile
	}
	if err != nil {
		return nil, state.CheckpointVersion{}, err
	}
	return raw, state.CheckpointVersion{Key: key, Tag: digest(raw)}, nil
}

func (f *Store) RawCheckpoint(_ context.Context, project, stack string) ([]byte, state.CheckpointVersion, error) {
	if f.root == "" {
		return nil, state.CheckpointVersion{}, errors.New("no file backend to read")
	}
	return f.read(project, stack)
}

// SwapLockFile is the stack's swap lock.
func (f *Store) SwapLockFile(project, stack string) string {
	return filepath.Join(f.root, ".paddock", "swap", url.PathEscape(project), url.PathEscape(stack)+".lock")
}

// lockSwap takes the stack's swap lock, waiting for another holder until
// ctx ends; the returned function releases it.
func (f *Store) lockSwap(ctx context.Context, project, stack string) (func(), error) {
	file := f.SwapLockFile(project, stack)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, fmt.Errorf("the stack's swap lock: %w", err)
	}
	h, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the stack's swap lock: %w", err)
	}
	for {
		err = syscall.Flock(int(h.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(h.Fd()), syscall.LOCK_UN); h.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			h.Close()
			return nil, fmt.Errorf("the stack's swap lock %s: %w", file, err)
		}
		select {
		case <-ctx.Done():
			h.Close()
			return nil, fmt.Errorf("waiting for the stack's swap lock %s: %w", file, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (f *Store) SwapCheckpoint(ctx context.Context, project, stack, key string, raw []byte, old state.CheckpointVersion) (state.CheckpointVersion, error) {
	if f.root == "" {
		return state.CheckpointVersion{}, errors.New("no file backend to write")
	}
	if !isVariant(project, stack, key) {
		return state.CheckpointVersion{}, fmt.Errorf("%s is not a checkpoint of stack %s/%s", key, project, stack)
	}
	unlock, err := f.lockSwap(ctx, project, stack)
	if err != nil {
		return state.CheckpointVersion{}, err
	}
	defer unlock()
	cur, now, err := f.read(project, stack)
	if err != nil {
		return state.CheckpointVersion{}, fmt.Errorf("reading the checkpoint before writing it: %w", err)
	}
	if now != old {
		return state.CheckpointVersion{}, &state.CheckpointChangedError{Where: f.file(key), Now: describeVersion(now)}
	}
	if !old.None() && key != old.Key {
		return state.CheckpointVersion{}, fmt.Errorf("the checkpoint of stack %s/%s moved from %s to %s: Paddock keeps the key it read", project, stack, old.Key, key)
	}
	// As Pulumi does: the checkpoint replaced is kept as <key>.bak (Backups).
	if !now.None() {
		if err := writeAtomic(f.file(now.Key)+".bak", cur); err != nil {
			return state.CheckpointVersion{}, fmt.Errorf("backing up the checkpoint %s: %w", f.file(now.Key), err)
		}
	}
	target := f.file(key)
	if err := writeAtomic(target, raw); err != nil {
		return state.CheckpointVersion{}, fmt.Errorf("writing the checkpoint %s: %w", target, err)
	}
	return state.CheckpointVersion{Key: key, Tag: digest(raw)}, nil
}

func describeVersion(v state.CheckpointVersion) string {
	if v.None() {
		return "it holds none now"
	}
	return "it holds another now, of SHA-256 " + v.Tag[:12]
}

func isVariant(project, stack, key string) bool {
	for _, v := range state.CheckpointVariants(project, stack) {
		if key == v {
			return true
		}
	}
	return false
}

// writeAtomic writes data to file through a temporary file beside it and a
// rename, so the file is whole before and after. The blob's metadata
// sidecar (file.attrs, its checksum) is removed first: it would describe
// the old bytes, and a blob without one reads as it is (RepairSidecars).
func writeAtomic(file string, data []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".paddock-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Remove(file + ".attrs"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (f *Store) PutUpdateFile(_ context.Context, kind, project, stack, name string, raw []byte) error {
	if f.root == "" {
		return errors.New("no file backend to write")
	}
	key := state.UpdateFileKey(kind, project, stack, name)
	if key == "" || name == "" {
		return fmt.Errorf("%q is not a file of the stack's %s", name, kind)
	}
	return writeAtomic(f.file(key), raw)
}
