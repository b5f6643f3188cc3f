package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/state/filestate"
	"github.com/paddock-platform/paddock/internal/state/s3state"
)

// This file is the backend's side of the fence on file:// and s3://
// (fence.go). Those backends take whatever Pulumi writes, so while a run
// holds a stack (takeFence), the CLI commands of the stack that write its
// state (up, refresh, destroy, import, state edits) never write the shared
// backend: each runs against a staging backend of its own, a file://
// directory in the process's scratch directory (scratch.go) seeded with the
// stack's checkpoint, and Paddock copies every checkpoint the CLI writes
// there back to the shared backend with a conditional write
// (state.CheckpointSwapper): the backend writes it only over the checkpoint
// this run last read or wrote. A runner that stalled as a whole and resumed
// after another run took the stack over therefore has its CLI's checkpoint
// refused by the backend, whatever its own fence got to first; the refusal
// revokes the run's lease, so the run stops as a lapsed run does.
//
// Every checkpoint the CLI writes is copied back as it lands (the staging
// file is polled), so a run killed midway leaves the shared backend with
// its last checkpoint, pending operations included, for the next run to
// recover (recover.go); and once more after the CLI ended, before the lock
// goes. The files Pulumi keeps per update follow (its history and the
// backup of the checkpoint it started from), so `pulumi stack history` and
// Paddock's own Backups see Paddock's runs on the shared backend.
//
// Pulumi's own lock of the stack is taken in the staging backend, where no
// one else looks: Paddock holds the shared backend's lock itself for each
// staged command (lockForRepair: Pulumi's format, so a hand-run `pulumi up`
// sees the stack locked and the stale-lock logic judges it as before), and
// the CLI dies with this process (Pdeathsig), so no orphaned CLI goes on
// writing a staging backend nobody copies back.
//
// Commands that only read (preview, stack export, the fast path's own
// reads) go on reading the shared backend.

// stagePoll is how often a staged command's checkpoint is looked at.
var stagePoll = 200 * time.Millisecond

// stage is the staging of one stack while run rec holds it.
type stage struct {
	e              *Engine
	name           string
	rec            *runRecord
	swap           state.CheckpointSwapper
	project, stack string
}

// stageStack puts the writing CLI commands of stack name on staging
// backends while rec holds it, when its backend is file:// or s3://; the
// returned function ends that.
func (e *Engine) stageStack(name string, rec *runRecord, s state.Store) func() {
	switch s.(type) {
	case *filestate.Store, *s3state.Store:
	default:
		return func() {}
	}
	project, stack := e.stackRef(name)
	st := &stage{e: e, name: name, rec: rec, swap: s.(state.CheckpointSwapper), project: project, stack: stack}
	f := e.fence()
	f.mu.Lock()
	if f.staged == nil {
		f.staged = map[string]*stage{}
	}
	f.staged[name] = st
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if f.staged[name] == st {
			delete(f.staged, name)
		}
		f.mu.Unlock()
	}
}

// stageOf is the staging of stack name, nil when none.
func (e *Engine) stageOf(name string) *stage {
	f := e.fence()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.staged[name]
}

// writesState reports whether the CLI command args may write the stack's
// checkpoint. `cancel` and `stack rm` act on the shared backend itself,
// and are not run while a run holds the stack.
func writesState(args []string) bool {
	var words []string
	for i := 0; i < len(args) && len(words) < 2; i++ {
		if args[i] == "--" {
			break
		}
		if !strings.HasPrefix(args[i], "-") {
			words = append(words, args[i])
		}
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "up", "update", "refresh", "destroy", "import", "state":
		return true
	case "stack":
		return len(words) > 1 && words[1] == "import"
	}
	return false
}

// staging is one staged command's staging backend, and where its
// checkpoint stands against the shared backend's.
type staging struct {
	st   *stage
	root string
	// version is the shared checkpoint as this run last read or wrote it.
	version state.CheckpointVersion
	// copied is the digest of the staging checkpoint as seeded or last
	// copied back; seen, its key, size and time as last looked at.
	copied string
	seen   stamp
}

type stamp struct {
	key  string
	size int64
	mod  time.Time
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// seed makes a staging backend holding the stack's checkpoint as the
// shared backend holds it now.
func (st *stage) seed(ctx context.Context) (*staging, error) {
	scratch, err := scratchDir()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(scratch, "stage-")
	if err != nil {
		return nil, fmt.Errorf("the staging backend: %w", err)
	}
	g := &staging{st: st, root: root}
	ok := false
	defer func() {
		if !ok {
			g.remove()
		}
	}()
	raw, v, err := st.swap.RawCheckpoint(ctx, st.project, st.stack)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoint of stack %q: %w", st.name, err)
	}
	// Project-scoped stacks (.pulumi/stacks/<project>/<stack>.json), the
	// layout every state Paddock reads has.
	if err := writeFile(filepath.Join(root, ".pulumi", "meta.yaml"), []byte("version: 1\n")); err != nil {
		return nil, err
	}
	g.version = v
	if !v.None() {
		if err := writeFile(g.file(v.Key), raw); err != nil {
			return nil, err
		}
		g.copied = digestOf(raw)
	}
	g.seen, _ = g.look()
	ok = true
	return g, nil
}

func writeFile(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("the staging backend: %w", err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return fmt.Errorf("the staging backend: %w", err)
	}
	return nil
}

func (g *staging) file(key string) string { return filepath.Join(g.root, filepath.FromSlash(key)) }

func (g *staging) remove() { _ = os.RemoveAll(g.root) }

// env points the CLI at the staging backend, compressing as the shared
// checkpoint is (its key must not move).
func (g *staging) env() []string {
	env := []string{"PULUMI_BACKEND_URL=file://" + filepath.ToSlash(g.root)}
	if !g.version.None() {
		gz, zst := strings.HasSuffix(g.version.Key, ".gz"), strings.HasSuffix(g.version.Key, ".zst")
		env = append(env, fmt.Sprintf("PULUMI_DIY_BACKEND_GZIP=%t", gz), fmt.Sprintf("PULUMI_DIY_BACKEND_ZSTD=%t", zst))
	}
	return env
}

// look is the staging checkpoint Pulumi would read (the variant written
// last), zero when there is none.
func (g *staging) look() (stamp, error) {
	var best stamp
	for _, key := range state.CheckpointVariants(g.st.project, g.st.stack) {
		fi, err := os.Stat(g.file(key))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return stamp{}, err
		}
		if best.key == "" || !fi.ModTime().Before(best.mod) {
			best = stamp{key: key, size: fi.Size(), mod: fi.ModTime()}
		}
	}
	return best, nil
}

// sync copies the staging checkpoint back to the shared backend when it
// changed since it was seeded or last copied, over the version this run
// last read or wrote. A run whose lease lapsed writes nothing; a write the
// backend refuses revokes the run's lease. Either way the error is the
// run's *state.LapsedError.
func (g *staging) sync() error {
	now, err := g.look()
	if err != nil || now.key == "" || now == g.seen {
		return err
	}
	raw, err := os.ReadFile(g.file(now.key))
	if err != nil {
		return err
	}
	sum := digestOf(raw)
	if sum == g.copied {
		g.seen = now
		return nil
	}
	if err := g.st.rec.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	v, err := g.st.swap.SwapCheckpoint(ctx, g.st.project, g.st.stack, now.key, raw, g.version)
	var changed *state.CheckpointChangedError
	if errors.As(err, &changed) {
		if lerr := g.st.rec.lease.Revoke("the backend refused this run's checkpoint: another run changed the stack after this run's lease lapsed"); lerr != nil {
			return lerr
		}
		return err
	}
	if err != nil {
		return err
	}
	g.version, g.copied, g.seen = v, sum, now
	return nil
}

// copyUpdateFiles copies the files the CLI kept of its update (its
// history, and the backup of the checkpoint it started from) to the shared
// backend, as Pulumi would have written them there: each a new name.
func (g *staging) copyUpdateFiles() error {
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	for _, kind := range []string{state.UpdateHistory, state.UpdateBackups} {
		dir := g.file(state.UpdateFileKey(kind, g.st.project, g.st.stack, ""))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ent := range ents {
			name := ent.Name()
			if !ent.Type().IsRegular() || strings.HasSuffix(name, ".attrs") || strings.HasPrefix(name, ".") {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			if err := g.st.swap.PutUpdateFile(ctx, kind, g.st.project, g.st.stack, name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// run runs the CLI command args of the stack on a staging backend, under
// the shared backend's lock, copying its checkpoints back as they land.
func (st *stage) run(ctx context.Context, f fencedCLI, workdir string, stdin io.Reader, outs, errOuts []io.Writer, env []string, args []string) (string, string, int, error) {
	if err := st.rec.check(); err != nil {
		return "", "", -2, err
	}
	release, holder, err := st.e.lockForRepair(st.name)
	if err != nil {
		return "", "", -2, err
	}
	if release == nil {
		// What Pulumi says of a stack another update holds: withLock waits
		// on it, or removes the lock of a dead holder, as it does Pulumi's.
		msg := fmt.Sprintf("error: the stack is currently locked by 1 lock(s): created by %s", holder)
		return "", msg + "\n", 255, errors.New(msg)
	}
	defer release()
	g, err := st.seed(ctx)
	if err != nil {
		return "", "", -2, err
	}
	defer g.remove()
	run := f.command(ctx, workdir, stdin, outs, errOuts, slices.Concat(env, g.env()), args)
	// The CLI dies with this process: its staging backend goes with it.
	run.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited, err := startPinned(f.procs, run)
	if err != nil {
		return "", "", -2, err
	}

	var (
		mu      sync.Mutex
		stopped bool
	)
	lost := make(chan error, 1) // a copy the backend refused, or a lapse
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		t := time.NewTicker(stagePoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			err := g.sync()
			var lapsed *state.LapsedError
			if errors.As(err, &lapsed) {
				lost <- err
				mu.Lock()
				if !stopped {
					_ = run.cmd.Process.Kill()
				}
				mu.Unlock()
				return
			}
			// Any other failure (the backend out of reach) is tried again
			// on the next change, and last after the CLI ended.
		}
	}()
	waitErr := <-exited
	mu.Lock()
	stopped = true
	mu.Unlock()
	close(done)
	<-polled
	stdout, stderr, code, err := f.finish(run, waitErr)
	select {
	case lapsed := <-lost:
		return stdout, stderr, -2, lapsed
	default:
	}
	var lapsed *state.LapsedError
	if errors.As(err, &lapsed) {
		return stdout, stderr, code, err
	}
	// The last checkpoint: what the CLI saved on its way out, whether it
	// succeeded, failed or was interrupted.
	if serr := g.sync(); serr != nil {
		if errors.As(serr, &lapsed) {
			return stdout, stderr, -2, serr
		}
		return stdout, stderr, -2, fmt.Errorf("copying the checkpoint of stack %q back to the backend: %w", st.name, serr)
	}
	if herr := g.copyUpdateFiles(); herr != nil {
		fmt.Fprintf(st.e.opts.Out, "paddock %s: the update history of stack %q was not copied to the backend:\n  %v\n", st.rec.Op, st.name, herr)
	}
	return stdout, stderr, code, err
}

// startPinned starts the CLI from a goroutine locked to its OS thread until
// the CLI exits: Pdeathsig follows the thread that started the process, and
// the Go runtime may end an unlocked thread. The channel gets Wait's error.
func startPinned(procs *cliProcs, run cliRun) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := procs.start(run.cmd); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- run.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}
