package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/state"
)

// Result summarises one engine operation.
type Result struct {
	Stack    string
	Changes  map[string]int // op -> count ("create", "update", "delete", "same", ...)
	Duration time.Duration
	Outputs  map[string]any
	// Message replaces the change counts in Summary when set (a fast no-op up).
	Message string
}

// Changed counts every operation that touched the cluster.
func (r *Result) Changed() int {
	n := 0
	for op, c := range r.Changes {
		if op != "same" {
			n += c
		}
	}
	return n
}

// Summary is one line: "2 created, 1 updated, 14 unchanged in 8.1s".
func (r *Result) Summary() string {
	if r.Message != "" {
		return r.Message
	}
	names := map[string]string{"create": "created", "update": "updated", "delete": "deleted", "replace": "replaced", "same": "unchanged"}
	var ops []string
	for op := range r.Changes {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var parts []string
	for _, op := range ops {
		n := names[op]
		if n == "" {
			n = op
		}
		parts = append(parts, fmt.Sprintf("%d %s", r.Changes[op], n))
	}
	if len(parts) == 0 {
		parts = []string{"no resources"}
	}
	return fmt.Sprintf("%s in %.1fs", strings.Join(parts, ", "), r.Duration.Seconds())
}

func changes(m *map[string]int) map[string]int {
	out := map[string]int{}
	if m == nil {
		return out
	}
	for k, v := range *m {
		out[k] = v
	}
	return out
}

// Up refreshes the stack against the live cluster and converges it on the
// platform: whatever drifted on objects Paddock owns is put back. A platform
// whose spec and cluster both match the state is confirmed without the
// engine (fastUp, fast.go). Otherwise it first waits for the platform's namespaces and CRDs still being deleted, and after
// a run that did not finish (journal.go) it deletes what that run created
// that the spec no longer declares (prune.go). Either way it ends by waiting
// for the warm pools a template change refills (afterUp, pools.go).
func (e *Engine) Up(ctx context.Context, p *model.Platform) (*Result, error) {
	since := time.Now()
	if err := e.guardStoredVersions(ctx, "up", p); err != nil {
		return nil, err
	}
	if err := e.guardMonitoringCRDs(ctx, "up", p); err != nil {
		return nil, err
	}
	if err := e.guardReleaseChange(ctx, "up", p); err != nil {
		return nil, err
	}
	if res, err := e.fastUp(ctx, p); err != nil || res != nil {
		return e.afterUp(ctx, p, since, res, err)
	}
	s, err := e.stack(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := guardReplacements(ctx, "up", p, s.Export, e.opts.Out); err != nil {
		return nil, err
	}
	start := time.Now()
	e.prepare("up", s)
	if err := e.waitTerminating(ctx, "up", p); err != nil {
		return nil, err
	}
	dead, rec, err := e.startRun("up", s.Name(), p)
	if err != nil {
		return nil, err
	}
	defer rec.abandon() // however the run ends, its lease stops with it
	created := e.watchCreations(ctx, p)
	defer created.Close()
	var res auto.UpResult
	var applied string // the digest of the checkpoint this run's update left
	var appliedErr error
	err = e.journaled(ctx, "up", s.Name(), rec, func() error {
		if err := e.clearPending(ctx, "up", s); err != nil {
			return err
		}
		ch := make(chan events.EngineEvent)
		pr := newProgress(e.opts.Out, "up")
		go pr.consume(created.Tee(ch))
		var err error
		res, err = s.Up(ctx, optup.Refresh(), optup.Parallel(e.parallel()), optup.EventStreams(ch), optup.SuppressProgress())
		pr.waitAfter(err)
		if err == nil {
			// Read as soon as the CLI let go of the stack: another run's
			// update cannot have begun and finished since.
			applied, appliedErr = e.stateDigest(s.Name())
		}
		return err
	})
	var lapsed *state.LapsedError
	if errors.As(err, &lapsed) {
		return nil, err
	}
	if err != nil {
		return nil, opError("up", s.Name(), e.hideBackendPassword(err))
	}
	repaired, err := e.settleUpWith(ctx, p, s.Name(), rec, dead, applied, appliedErr, created)
	if err != nil {
		return nil, err
	}
	out := &Result{Stack: s.Name(), Changes: changes(res.Summary.ResourceChanges), Duration: time.Since(start), Outputs: map[string]any{}}
	if repaired > 0 {
		out.Changes["repaired"] = repaired
	}
	for k, v := range res.Outputs {
		if v.Secret {
			out.Outputs[k] = "[secret]"
		} else {
			out.Outputs[k] = v.Value
		}
	}
	return e.afterUp(ctx, p, since, out, nil)
}

// ErrSuperseded is an up whose update succeeded, but another run changed
// the stack before this one could prune and repair (settleUp).
var ErrSuperseded = errors.New("superseded by another run")

// settleUp is what an up does after Pulumi's update: deleting what dead
// runs left (finishRun) and putting back what other managers changed
// (repairAfterUp). Both judge from this run's spec and the state its update
// left, so they run under the stack's lock (holdStack), after the state is
// read again: a run on spec v1 finishing after another applied v2 would
// otherwise delete v2's new objects and write v1's objects back over v2's.
//
// When the state is no longer what this run's update left, the run neither
// prunes nor repairs and fails (ErrSuperseded). Skipping quietly would let a
// pipeline report success for a spec that is not what runs: the other run
// may have applied an older spec. The person reading the failure knows which
// spec should win; Paddock cannot. The run's record goes (its update
// finished), and what dead runs left stays for the next run.
func (e *Engine) settleUp(ctx context.Context, p *model.Platform, name string, rec *runRecord, dead []DeadRun, applied string, appliedErr error) (int, error) {
	return e.settleUpWith(ctx, p, name, rec, dead, applied, appliedErr, nil)
}

// settleUpWith is settleUp whose repair takes the stored forms of the
// objects the run created from their creations (converge.Creations).
func (e *Engine) settleUpWith(ctx context.Context, p *model.Platform, name string, rec *runRecord, dead []DeadRun, applied string, appliedErr error, created *converge.Creations) (int, error) {
	release, err := e.holdStack(ctx, "up", name, rec)
	var noReader *state.NoReaderError
	switch {
	case errors.As(err, &noReader) || errors.As(appliedErr, &noReader):
		// A backend Paddock does not read: no lock to take, no state to
		// read again; pruning and repairing go on as they always did.
	case err != nil:
		return 0, fmt.Errorf("up of stack %q applied the spec, but %w", name, err)
	case appliedErr != nil:
		release()
		return 0, fmt.Errorf("up of stack %q applied the spec, but reading the state it left failed, so nothing was pruned or repaired: %w; run up again", name, appliedErr)
	default:
		// Released even after a lapse: the lock is this run's own, by a key
		// no other run holds, and left behind no journaled run explains it
		// once this run's record goes, so only a person could remove it.
		defer release()
		now, err := e.stateDigest(name)
		if err != nil {
			return 0, fmt.Errorf("up of stack %q applied the spec, but reading the state again failed, so nothing was pruned or repaired: %w; run up again", name, err)
		}
		if now != applied {
			if err := rec.end(); err != nil {
				fmt.Fprintf(e.opts.Out, "paddock up: %v\n", err)
			}
			return 0, fmt.Errorf("up of stack %q applied this spec, but another run changed the stack after it (%w), so this run neither pruned nor repaired: that would undo the other run's spec with this one's. "+
				"The stack now holds what the other run applied; if this run's spec is the one that should run, run `paddock up` with it again", name, ErrSuperseded)
		}
	}
	if err := e.finishRun(ctx, "up", p, name, rec, dead); err != nil {
		return 0, err
	}
	repaired, err := e.repairAfterUpWith(ctx, p, name, rec, created)
	if err != nil {
		var lapsed *state.LapsedError
		if errors.As(err, &lapsed) {
			return 0, err
		}
		return 0, fmt.Errorf("up of stack %q applied the spec, but an object changed out of band was not put back: %w", name, err)
	}
	return repaired, nil
}

// watchCreations starts recording what the run creates on a cluster the
// target's kubeconfig reaches (converge.StartCreations), before the engine
// writes; nil where there is none (a cluster the stack creates) or it cannot start:
// the repair then asks the server for every stored form.
func (e *Engine) watchCreations(ctx context.Context, p *model.Platform) *converge.Creations {
	if p.Target.Kind == model.TargetGKE || p.Target.Kubeconfig == "" {
		return nil
	}
	c, err := converge.ClientsFor(p)
	if err != nil {
		return nil
	}
	built, err := manifests.Build(p)
	if err != nil {
		return nil
	}
	var objs []*unstructured.Unstructured
	for _, g := range built.Groups() {
		objs = append(objs, g.Objects...)
	}
	return converge.StartCreations(ctx, c.Dyn, objs)
}

// holdStack takes the stack's lock (lockForRepair: Pulumi's format, so
// Pulumi's own runs wait on it) for what a run does beside Pulumi, waiting
// for another holder as withLock does (Options.LockWait).
func (e *Engine) holdStack(ctx context.Context, op, name string, rec *runRecord) (func(), error) {
	deadline := time.Now().Add(e.opts.LockWait)
	for attempt := 0; ; attempt++ {
		if err := rec.check(); err != nil {
			return nil, err
		}
		release, holder, err := e.lockForRepair(name)
		if err != nil {
			return nil, err
		}
		if release != nil {
			return release, nil
		}
		if err := rec.check(); err != nil {
			return nil, err // another run's lock is not a lapsed run's to remove
		}
		if e.removeStaleLocks(op, name) {
			continue
		}
		if attempt >= 1 && time.Now().After(deadline) {
			return nil, fmt.Errorf("another update holds the stack's lock (%s), so nothing a dead run left was pruned and nothing changed out of band was repaired: wait for it (--lock-wait), then run %s again", holder, op)
		}
		wait := time.Duration(200+rand.IntN(800)) * time.Millisecond
		if attempt >= 1 {
			wait = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Preview shows what Up would change, touching nothing.
func (e *Engine) Preview(ctx context.Context, p *model.Platform) (*Result, error) {
	s, err := e.stack(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := guardReplacements(ctx, "preview", p, s.Export, e.opts.Out); err != nil {
		return nil, err
	}
	if err := e.guardStoredVersions(ctx, "preview", p); err != nil {
		return nil, err
	}
	if err := e.guardMonitoringCRDs(ctx, "preview", p); err != nil {
		return nil, err
	}
	if err := e.guardReleaseChange(ctx, "preview", p); err != nil {
		return nil, err
	}
	start := time.Now()
	ch := make(chan events.EngineEvent)
	pr := newProgress(e.opts.Out, "preview")
	go pr.consume(ch)
	res, err := s.Preview(ctx, optpreview.Refresh(), optpreview.Parallel(e.parallel()), optpreview.EventStreams(ch), optpreview.SuppressProgress())
	pr.wait()
	if err != nil {
		return nil, opError("preview", s.Name(), e.hideBackendPassword(err))
	}
	c := map[string]int{}
	for op, n := range res.ChangeSummary {
		c[string(op)] = n
	}
	return &Result{Stack: s.Name(), Changes: c, Duration: time.Since(start)}, nil
}

// Destroy deletes every object of the stack.
func (e *Engine) Destroy(ctx context.Context, p *model.Platform) (*Result, error) {
	s, err := e.stack(ctx, p)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	e.prepare("destroy", s)
	dead, rec, err := e.startRun("destroy", s.Name(), nil)
	if err != nil {
		return nil, err
	}
	defer rec.abandon() // however the run ends, its lease stops with it
	if res, done, err := e.destroyDirect(ctx, p, s, rec); err != nil || done {
		if err == nil {
			err = e.finishRun(ctx, "destroy", p, s.Name(), rec, dead)
		}
		return res, err
	}
	if len(e.shared) > 0 {
		return nil, fmt.Errorf("destroy of stack %q refused before anything is deleted: %d of its objects are held by other stacks too, and Pulumi's destroy (the path this stack takes) cannot leave them: destroy the other stacks first, or run again with --delete-shared (their sandboxes go with the shared release)", s.Name(), len(e.shared))
	}
	var res auto.DestroyResult
	err = e.journaled(ctx, "destroy", s.Name(), rec, func() error {
		if err := e.clearPending(ctx, "destroy", s); err != nil {
			return err
		}
		ch := make(chan events.EngineEvent)
		pr := newProgress(e.opts.Out, "destroy")
		go pr.consume(ch)
		var err error
		res, err = s.Destroy(ctx, optdestroy.Refresh(), optdestroy.Parallel(e.parallel()), optdestroy.EventStreams(ch), optdestroy.SuppressProgress())
		pr.waitAfter(err)
		return err
	})
	var lapsed *state.LapsedError
	if errors.As(err, &lapsed) {
		return nil, err
	}
	if err != nil {
		return nil, opError("destroy", s.Name(), e.hideBackendPassword(err))
	}
	if err := e.finishRun(ctx, "destroy", p, s.Name(), rec, dead); err != nil {
		return nil, err
	}
	return &Result{Stack: s.Name(), Changes: changes(res.Summary.ResourceChanges), Duration: time.Since(start)}, nil
}

// Outputs returns the stack outputs of the platform's last update.
func (e *Engine) Outputs(ctx context.Context, p *model.Platform) (map[string]any, error) {
	s, err := e.stack(ctx, p)
	if err != nil {
		return nil, err
	}
	outs, err := s.Outputs(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	for k, v := range outs {
		if v.Secret {
			m[k] = "[secret]"
		} else {
			m[k] = v.Value
		}
	}
	return m, nil
}

// opError keeps the engine's own message (the last lines of stderr) but leads with
// what failed, so the CLI prints one clear error.
func opError(op, stack string, err error) error {
	msg := err.Error()
	if isLockError(err) {
		return fmt.Errorf("%s of stack %q: another update is running on this stack; wait for it, or if it died run `paddock cancel --stack %s`", op, stack, stack)
	}
	if strings.Contains(msg, "another update is running on this stack") {
		return err // withLock already said who holds it and what to do
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	var keep []string
	seen := map[string]bool{}
	unreachable := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.Contains(l, "unreachable cluster") {
			// The provider's advice (PULUMI_K8S_DELETE_UNREACHABLE) would drop
			// every resource from the state of a cluster that is only down.
			unreachable = true
			continue
		}
		if apiServerGone(l) {
			unreachable = true
		}
		// Pulumi's own error lines, not its progress lines that quote them.
		if strings.HasPrefix(l, "error:") && !seen[l] {
			seen[l] = true
			keep = append(keep, l)
		}
	}
	if strings.Contains(msg, "no resource plugin 'gcp") || strings.Contains(msg, "no resource plugin 'pulumi-resource-gcp") {
		keep = append([]string{"error: the GCP provider plugin is not installed: run `make tools-gcp` once (it needs network), then " + op + " again"}, keep...)
	}
	if unreachable {
		keep = append([]string{"error: the cluster's API server did not answer, so the update stopped; what it applied before is in the state",
			"bring the API server back (`paddock local status` / `paddock local up` on the local target), then run " + op + " again: it refreshes and converges",
			"do not set PULUMI_K8S_DELETE_UNREACHABLE: it removes the resources of a cluster that is only down from the state"}, keep...)
	}
	if len(keep) == 0 {
		keep = lines
		if len(keep) > 8 {
			keep = keep[len(keep)-8:]
		}
	}
	return fmt.Errorf("%s of stack %q failed:\n  %s", op, stack, strings.Join(keep, "\n  "))
}

// apiServerGone reports whether an error line says the cluster's API server
// could not be reached (as opposed to answering with an error): a connection
// that could not be made, or one it dropped mid-request because it died.
func apiServerGone(line string) bool {
	switch {
	case strings.Contains(line, "dial tcp"):
		for _, why := range []string{"connection refused", "i/o timeout", "no route to host", "connection reset"} {
			if strings.Contains(line, why) {
				return true
			}
		}
	case strings.Contains(line, "read tcp"), strings.Contains(line, "write tcp"):
		return strings.Contains(line, "connection reset by peer") || strings.Contains(line, "broken pipe")
	case droppedRequest.MatchString(line):
		return true
	}
	return false
}

// droppedRequest is a request whose connection closed before any answer
// came: Go's HTTP client says `Patch "https://...": unexpected EOF` (or EOF)
// when the API server dies while it holds the request.
var droppedRequest = regexp.MustCompile(`\b(Get|Head|Post|Put|Patch|Delete) "https?://[^"]+": (unexpected )?EOF\b`)
