package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/state"
)

// This file is destroy at the speed of namespace deletion: the plan and the
// deleter are package converge's (its destroyplan.go says the order); this
// file runs them under the stack's lock, and empties the state once every
// object is gone.

// destroyDirect is Destroy's direct path. It reports done=false, having
// changed nothing, when the stack needs Pulumi's destroy; it says why in
// one line.
func (e *Engine) destroyDirect(ctx context.Context, p *model.Platform, s auto.Stack, rec *runRecord) (res *Result, done bool, err error) {
	name := s.Name()
	fallback := func(why string) (*Result, bool, error) {
		fmt.Fprintf(e.opts.Out, "paddock destroy: Pulumi's destroy, because %s\n", why)
		return nil, false, nil
	}
	if e.opts.Full {
		return fallback("--full asks for it")
	}
	root, _, err := e.fileBackend()
	if err != nil {
		return nil, false, err
	}
	if root == "" {
		return fallback("direct deletion empties the state file itself, so it runs on a file backend only")
	}
	if p.Target.Kind == model.TargetGKE || p.Target.Kubeconfig == "" {
		return fallback("the platform's cluster is reached only through the stack (target " + string(p.Target.Kind) + ")")
	}
	start := time.Now()
	var unlock func()
	// journaled, not withLock: a destroy that never got the lock drops its
	// journal record, as any run refused on the lock does.
	err = e.journaled(ctx, "destroy", name, rec, func() error {
		var err error
		unlock, err = e.lockStack(name)
		return err
	})
	var lapsed *state.LapsedError
	if errors.As(err, &lapsed) {
		return nil, false, err
	}
	if err != nil {
		return nil, false, opError("destroy", name, e.hideBackendPassword(err))
	}
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	exported, err := e.exportState(ctx, s)
	if err != nil {
		return nil, false, fmt.Errorf("destroy of stack %q: exporting the state: %w", name, err)
	}
	stateFile, err := e.stateFile(name)
	if err != nil {
		return nil, false, err
	}
	before, err := fileDigest(stateFile)
	if err != nil {
		return nil, false, err
	}
	plan, why, err := converge.PlanDirectDestroy(exported.Deployment, p, e.shared)
	if err != nil {
		return nil, false, fmt.Errorf("destroy of stack %q: %w", name, err)
	}
	if why != "" {
		unlock()
		unlock = nil
		return fallback(why)
	}
	if plan.StateResources == 0 {
		return &Result{Stack: name, Changes: map[string]int{}, Duration: time.Since(start)}, true, nil
	}
	d, err := converge.NewDirectDeleter(p, e.opts.Out, plan.Resources)
	if err != nil {
		return nil, false, err
	}
	fmt.Fprintf(e.opts.Out, "paddock destroy: deleting the %d objects of stack %q directly; the state is emptied once they are all gone\n", plan.Resources, name)
	if len(plan.Kept) > 0 {
		fmt.Fprintf(e.opts.Out, "paddock destroy: leaving %d objects other stacks of the project hold too (the last of them deletes them): %s\n", len(plan.Kept), converge.KeptList(plan.Kept))
	}
	fmt.Fprintf(e.opts.Out, "  %s: state read\n", time.Since(start).Round(10*time.Millisecond))
	if err := rec.check(); err != nil {
		return nil, false, err
	}
	if err := d.Run(ctx, plan); err != nil {
		return nil, false, fmt.Errorf("destroy of stack %q: %w", name, err)
	}
	empty, err := converge.EmptyDeployment(exported)
	if err != nil {
		return nil, false, fmt.Errorf("destroy of stack %q: %w", name, err)
	}
	// `stack import` takes the stack's lock itself: ours goes first. Should
	// another run have got in between, its state is not ours to empty.
	unlock()
	unlock = nil
	after, err := fileDigest(stateFile)
	if err != nil {
		return nil, false, err
	}
	if after != before {
		return nil, false, fmt.Errorf("destroy of stack %q: every object is deleted, but another run changed the state meanwhile, so it was left as that run wrote it: run destroy again", name)
	}
	if err := rec.check(); err != nil {
		return nil, false, err
	}
	if err := s.Import(ctx, empty); err != nil {
		return nil, false, fmt.Errorf("destroy of stack %q: every object is deleted, but emptying the state failed (run destroy again: it finds them gone): %w", name, err)
	}
	return &Result{Stack: name, Changes: map[string]int{"delete": plan.Resources}, Duration: time.Since(start)}, true, nil
}

// exportState is the stack's deployment, under the stack's lock: read from
// its checkpoint file as the fast path reads it, or, for a checkpoint of
// another schema, from `pulumi stack export`.
func (e *Engine) exportState(ctx context.Context, s auto.Stack) (apitype.UntypedDeployment, error) {
	data, _, err := e.readStackState(s.Name())
	if err != nil {
		return apitype.UntypedDeployment{}, err
	}
	if data != nil {
		dep, ok, err := converge.DeploymentOf(data)
		if err != nil || ok {
			return dep, err
		}
	}
	return s.Export(ctx)
}

// KeepShared makes destroy leave objects in the cluster that other stacks
// hold too (stacks of one platform on one cluster all declare its Agent
// Sandbox release and runtime classes): the direct destroy drops them from
// this stack's state without deleting them; a destroy that must go through
// Pulumi is refused rather than delete them.
func (e *Engine) KeepShared(objs []ObjectRef) {
	e.shared = converge.SharedKeys(objs)
}

// fileDigest is the SHA-256 of file ("" for no file).
func fileDigest(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// lockStack takes the update lock of stack name on its file backend, in
// the form Pulumi writes and reads, so that no up or destroy starts while
// objects are deleted outside the engine. A lock held by anyone else is a
// lock error (withLock waits or fails on it). The returned function
// releases it.
func (e *Engine) lockStack(name string) (func(), error) {
	root, project, err := e.fileBackend()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, ".pulumi", "locks", "organization", project, bareStack(name))
	if dirs, _ := filepath.Glob(filepath.Join(root, ".pulumi", "locks", "*", project, bareStack(name))); len(dirs) == 1 {
		dir = dirs[0]
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the lock directory: %w", err)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, hex.EncodeToString(id)+".json")
	// The fields of Pulumi's own lock file (see Lock).
	content, err := json.Marshal(struct {
		PID       int       `json:"pid"`
		Username  string    `json:"username"`
		Hostname  string    `json:"hostname"`
		Timestamp time.Time `json:"timestamp"`
	}{os.Getpid(), os.Getenv("USER"), state.Hostname(), time.Now()})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, content, 0o600); err != nil {
		return nil, fmt.Errorf("taking the lock of stack %q: %w", name, err)
	}
	release := func() { _ = os.Remove(file) }
	// Pulumi's own order: write, then look for anyone else's; two runs
	// that start at once both back off and retry.
	locks, err := e.Locks(name)
	if err != nil {
		release()
		return nil, err
	}
	for _, l := range locks {
		if l.File != file {
			release()
			return nil, fmt.Errorf("the stack is currently locked by %d lock(s): %s", len(locks)-1, l)
		}
	}
	return release, nil
}
