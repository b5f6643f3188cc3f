package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/state"
)

// This file is the fence of shared state: a run whose lease lapsed
// (state.Lease) stops writing. Its Pulumi CLI is killed, not interrupted:
// on SIGINT (what the Automation API sends when its context ends) the CLI
// cancels gracefully and saves its checkpoint on the way out, which is the
// very write a lapsed run must not make. The runner's own fence cannot be
// all of it: a runner stalled as a whole (its CLI with it) may, once it
// resumes, have its CLI write before the fence kills it. So the backend
// checks too, on write: on postgres:// the database refuses a checkpoint
// once another run took the stack (state.Fencer, pgstate's fence); on
// file:// and s3:// the run's CLI writes a private staging backend, and
// Paddock copies each checkpoint back with a write the backend makes only
// over the checkpoint this run last read or wrote (staging.go,
// state.CheckpointSwapper).

// cliProcs keeps the Pulumi CLI processes an engine runs, so a lapsed run
// can kill them, and refuses new ones while the run is lapsed.
type cliProcs struct {
	mu      sync.Mutex
	running map[*os.Process]bool
	lapsed  error
}

// engineFence is what the fence keeps per engine, beside the Engine (whose
// fields are workspace.go's).
type engineFence struct {
	cli         *cliProcs
	toldNoFence bool

	mu sync.Mutex
	// staged are the stacks whose writing CLI commands run on a staging
	// backend (staging.go), by name, while a run holds them.
	staged map[string]*stage
}

var fences sync.Map // *Engine -> *engineFence

func (e *Engine) fence() *engineFence {
	f, _ := fences.LoadOrStore(e, &engineFence{cli: &cliProcs{running: map[*os.Process]bool{}}})
	return f.(*engineFence)
}

func (e *Engine) cli() *cliProcs { return e.fence().cli }

// lapse kills every running CLI (SIGKILL) and refuses new ones with err.
func (c *cliProcs) lapse(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lapsed = err
	for p := range c.running {
		_ = p.Kill()
	}
}

// reset lets the CLI run again, for a new run of the engine.
func (c *cliProcs) reset() {
	c.mu.Lock()
	c.lapsed = nil
	c.mu.Unlock()
}

func (c *cliProcs) start(cmd *exec.Cmd) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lapsed != nil {
		return c.lapsed
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.running[cmd.Process] = true
	return nil
}

func (c *cliProcs) done(p *os.Process) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, p)
	return c.lapsed
}

// fenceCLI wraps the Pulumi CLI the workspace of stack name runs (open, in
// workspace.go: auto.Pulumi(e.fenceCLI(cmd, name))) so a lapsed run can
// kill it, and so its writes go through a staging backend while a run
// holds the stack on file:// or s3:// (staging.go). Without it a lapsed run
// still refuses every write of its own, but its running CLI is only
// interrupted, and saves its checkpoint.
func (e *Engine) fenceCLI(cmd auto.PulumiCommand, name string) auto.PulumiCommand {
	return fencedCLI{PulumiCommand: cmd, path: pulumiPath(), procs: e.cli(), staged: func() *stage { return e.stageOf(name) }}
}

// pulumiPath is the CLI open runs: the pinned one under PADDOCK_HOME.
func pulumiPath() string {
	p, err := paths.Tool("pulumi")
	if err != nil {
		return "pulumi"
	}
	return p
}

// fencedCLI runs the Pulumi CLI as the Automation API's own command does
// (non-interactive, its directory first on PATH for its language hosts,
// interrupted when the context ends), keeping each process in procs.
type fencedCLI struct {
	auto.PulumiCommand // Version
	path               string
	procs              *cliProcs
	staged             func() *stage // the stack's staging, nil when none
}

// cliWaitDelay bounds the wait for the CLI's output once it exited or was
// interrupted: its plugins may hold the pipes open.
const cliWaitDelay = 10 * time.Second

func (f fencedCLI) Run(ctx context.Context, workdir string, stdin io.Reader, outs, errOuts []io.Writer, env []string, args ...string) (string, string, int, error) {
	if f.staged != nil && writesState(args) {
		if st := f.staged(); st != nil {
			return st.run(ctx, f, workdir, stdin, outs, errOuts, env, args)
		}
	}
	run := f.command(ctx, workdir, stdin, outs, errOuts, env, args)
	if err := f.procs.start(run.cmd); err != nil {
		return "", "", -2, err
	}
	return f.finish(run, run.cmd.Wait())
}

// cliRun is one run of the CLI: its command and what it says.
type cliRun struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
}

// command is the CLI's command for args, not started.
func (f fencedCLI) command(ctx context.Context, workdir string, stdin io.Reader, outs, errOuts []io.Writer, env []string, args []string) cliRun {
	flags := args
	if i := slices.Index(args, "--"); i >= 0 {
		flags = args[:i]
	}
	if !slices.Contains(flags, "--non-interactive") {
		args = append([]string{"--non-interactive"}, args...)
	}
	cmd := exec.CommandContext(ctx, f.path, args...)
	cmd.Dir = workdir
	cmd.Env = append(append(os.Environ(), env...), "PULUMI_AUTOMATION_API=true")
	if filepath.IsAbs(f.path) {
		path := ""
		for _, kv := range cmd.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v // the last one is the one exec uses
			}
		}
		cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(f.path)+string(os.PathListSeparator)+path)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(append(slices.Clone(outs), &stdout)...)
	cmd.Stderr = io.MultiWriter(append(slices.Clone(errOuts), &stderr)...)
	cmd.Stdin = stdin
	// An ended context interrupts, as the Automation API does: the CLI then
	// cancels and saves what it did. Only a lapse kills (cliProcs.lapse).
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = cliWaitDelay
	return cliRun{cmd: cmd, stdout: &stdout, stderr: &stderr}
}

// finish is what Run answers for a started run that ended with err.
func (f fencedCLI) finish(run cliRun, err error) (string, string, int, error) {
	if lapsed := f.procs.done(run.cmd.Process); lapsed != nil {
		return run.stdout.String(), run.stderr.String(), -2, lapsed
	}
	code := -2
	var exit *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &exit):
		code = exit.ExitCode()
	}
	return run.stdout.String(), run.stderr.String(), code, err
}

// newFenceToken is a run's token for the backend's fence: short, since
// PostgreSQL keeps 63 bytes of an application_name.
func newFenceToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// takeFence makes rec's token the fence of stack name on a backend that
// checks one (state.Fencer), unless another live run holds it (a
// *state.FenceHeldError, which withLock waits on as on a lock), and hands
// the stack's CLI the environment that carries the token. On file:// and
// s3:// it puts the stack's writing CLI commands on a staging backend
// instead (stageStack). The returned function undoes either.
func (e *Engine) takeFence(name string, rec *runRecord) (func(), error) {
	nothing := func() {}
	if rec == nil {
		return nothing, nil
	}
	if err := rec.check(); err != nil {
		return nothing, err
	}
	s, err := e.store()
	if err != nil {
		return nothing, err
	}
	fencer, ok := s.(state.Fencer)
	if !ok {
		return e.stageStack(name, rec, s), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), state.Timeout)
	defer cancel()
	project, stack := e.stackRef(name)
	err = fencer.TakeFence(ctx, project, stack, rec.token, rec.key, func(key string) bool {
		recs, _, err := e.readRuns(name)
		if err != nil {
			return true // unknown: the fence stays where it is
		}
		for _, r := range recs {
			if r.key == key {
				return r.alive()
			}
		}
		return false
	})
	var unavailable *state.FenceUnavailableError
	if errors.As(err, &unavailable) {
		if f := e.fence(); !f.toldNoFence {
			f.toldNoFence = true
			fmt.Fprintf(e.opts.Out, "paddock %s: the backend does not fence stack %q (%s): a run whose lease lapsed still stops writing, but the database would take its checkpoint\n", rec.Op, name, unavailable.Reason)
		}
		return nothing, nil
	}
	if err != nil {
		return nothing, err
	}
	st, ok := e.opened[name]
	if !ok {
		return nothing, nil
	}
	env := fencer.FenceEnv(rec.token)
	for k, v := range env {
		st.Workspace().SetEnvVar(k, v)
	}
	return func() {
		for k := range env {
			st.Workspace().UnsetEnvVar(k)
		}
	}, nil
}

// stateDigest is a digest of stack name's checkpoint as the backend holds
// it now ("" when there is none), to tell whether another run wrote it.
func (e *Engine) stateDigest(name string) (string, error) {
	data, _, err := e.readStackState(name)
	if err != nil {
		return "", err
	}
	if data == nil {
		return "", nil
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
