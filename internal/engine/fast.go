package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/state"
)

// This file is the fast path of a no-op `up` and of `drift`. When the spec
// is exactly what the stack last applied, the only thing that can differ is
// the cluster, and that is read with one label-selected LIST per kind rather
// than one GET per resource plus the engine's work per resource. Anything
// the fast path cannot vouch for (a spec change, a lock, a dead run, a
// backend or target it cannot read) is left to the Pulumi engine, and the
// caller says why in one line. The comparison and the repair themselves are
// package converge's; this file decides when they run.

// fastUp answers an up whose spec is what the stack last applied without
// the engine: a platform that matches is confirmed, and objects changed out
// of band are repaired in place (converge.RepairLive). It returns nil when
// the engine must run (it says why): a spec change, or an object deleted out
// of band.
func (e *Engine) fastUp(ctx context.Context, p *model.Platform) (*Result, error) {
	if e.opts.Full {
		return nil, nil
	}
	start := time.Now()
	res, reason, err := e.fastCheck(ctx, p)
	if err != nil {
		return nil, nil // cancelled: the engine's run reports it
	}
	if reason == "" {
		for _, r := range res.Report.Resources {
			if r.Change == drift.Missing {
				reason = r.Title() + " was deleted from the cluster"
				break
			}
		}
	}
	if reason != "" {
		fmt.Fprintf(e.opts.Out, "paddock up: full run: %s\n", reason)
		return nil, nil
	}
	return e.fastRepair(ctx, p, res, start)
}

// fastRepair is fastUp once the comparison found nothing the engine must
// do: it repairs what drifted under the stack's lock, or returns nil (saying
// why) for the engine to run.
func (e *Engine) fastRepair(ctx context.Context, p *model.Platform, res *converge.Comparison, start time.Time) (*Result, error) {
	converge.KeepTrusted(e.opts.Out, "up", p, res)
	if len(res.Report.Resources) > 0 {
		release, holder, lerr := e.lockForRepair(e.stackName(p))
		switch {
		case lerr != nil:
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack's lock: %s\n", oneLine(lerr))
			return nil, nil
		case release == nil:
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack is locked by another run (%s)\n", holder)
			return nil, nil
		}
		defer release()
		// The comparison was made before the lock: another run may have
		// applied another spec since, and repairing from this comparison
		// would write this spec's objects back over it. The engine's run
		// then applies this spec under Pulumi's lock, as any up does.
		if now, err := e.stateDigest(e.stackName(p)); err != nil || now != res.StateDigest {
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack's state changed after it was compared with the cluster (another run wrote it)\n")
			return nil, nil
		}
	}
	repaired, err := converge.RepairLive(ctx, e.opts.Out, "up", res)
	if err == nil && repaired > 0 {
		err = e.confirmRepaired(ctx, res.Clients, p, e.stackName(p), res)
	}
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	out := &Result{
		Stack:    e.stackName(p),
		Changes:  map[string]int{"same": res.Report.Checked - repaired},
		Duration: took,
		Outputs:  res.Outputs,
		Message:  fmt.Sprintf("nothing changed: %d unchanged, checked live in %.1fs", res.Report.Checked, took.Seconds()),
	}
	if repaired > 0 {
		out.Changes["repaired"] = repaired
		out.Message = fmt.Sprintf("repaired %d object(s) changed out of band, %d unchanged, checked live in %.1fs", repaired, res.Report.Checked-repaired, took.Seconds())
	}
	return out, nil
}

// fastDrift answers drift without the engine, or returns nil (saying why)
// for the engine's refresh-and-preview to answer.
func (e *Engine) fastDrift(ctx context.Context, p *model.Platform) *drift.Report {
	if e.opts.Full {
		return nil
	}
	res, reason, err := e.fastCheck(ctx, p)
	if err != nil {
		return nil
	}
	if reason != "" {
		fmt.Fprintf(e.opts.Out, "paddock drift: full run: %s\n", reason)
		return nil
	}
	fmt.Fprintf(e.opts.Out, "paddock drift: compared %d objects live (%d lists, %d gets, %d dry-runs) in %.2fs\n",
		res.Report.Checked, res.Lists, res.Gets, res.DryRuns, res.Report.Compare.Seconds())
	return res.Report
}

// fastCheck decides whether the fast path may answer for platform p and, if
// so, compares the live cluster with it. reason is "" when it answered, else
// one line saying why the engine must run; err is only a cancelled context.
func (e *Engine) fastCheck(ctx context.Context, p *model.Platform) (*converge.Comparison, string, error) {
	start := time.Now()
	name := e.stackName(p)
	plan, reason := e.fastObjectPlan(ctx, p, name)
	if reason != "" {
		return nil, reason, ctx.Err()
	}
	objs, outputs := plan.Objects, plan.Outputs
	c, err := converge.ClientsFor(p)
	if err != nil {
		return nil, "the cluster's kubeconfig does not load: " + oneLine(err), nil
	}
	res, err := e.compareWhole(ctx, c, p, name, objs, converge.FormsCached)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "reading the live platform failed: " + oneLine(err), nil
	}
	res.Report.Platform, res.Report.Stack, res.Report.Target = p.Name, name, string(p.Target.Kind)
	res.Report.Compare = time.Since(start)
	res.Outputs = outputs
	res.StateDigest = plan.Digest
	return res, "", nil
}

// compareWhole compares the live objects with objs whole
// (converge.CompareWhole), with the stack's cache of stored forms. It keeps
// the objects and client on the result for a repair.
func (e *Engine) compareWhole(ctx context.Context, c *converge.Clients, p *model.Platform, name string, objs []*converge.Object, use converge.FormsUse) (*converge.Comparison, error) {
	return e.compareWholeWith(ctx, c, p, name, objs, use, nil)
}

// compareWholeWith is compareWhole taking the stored forms of the objects a
// run created from their creations (converge.Creations) where it can.
func (e *Engine) compareWholeWith(ctx context.Context, c *converge.Clients, p *model.Platform, name string, objs []*converge.Object, use converge.FormsUse, created *converge.Creations) (*converge.Comparison, error) {
	return converge.CompareWhole(ctx, c, p, e.storedFormsFile(name), objs, use, created, e.opts.Out)
}

// storedFormsFile is the file of stack name's cache of stored forms
// (converge's stored.go), "" when the backend does not say: the cache then
// keeps nothing.
func (e *Engine) storedFormsFile(name string) string {
	backend, err := e.backendURL()
	if err != nil {
		return ""
	}
	return filepath.Join(paths.Home(), "stored", state.BackendKey(backend), url.PathEscape(name)+".json")
}

// fastPlan checks everything that can be checked without the cluster and
// pairs each declared object with its state. reason is "" when the fast path
// may go on.
func (e *Engine) fastPlan(ctx context.Context, p *model.Platform, name string) ([]*converge.Object, map[string]any, string) {
	plan, reason := e.fastObjectPlan(ctx, p, name)
	if reason != "" {
		return nil, nil, reason
	}
	return plan.Objects, plan.Outputs, ""
}

// fastObjectPlan is fastPlan's plan whole, with the digest of the state it
// read.
func (e *Engine) fastObjectPlan(ctx context.Context, p *model.Platform, name string) (*converge.Plan, string) {
	switch {
	case p.Target.Kind == model.TargetGKE:
		return nil, "the target is GKE, whose cloud resources only the engine reads"
	case p.Target.Kubeconfig == "":
		return nil, "the target has no kubeconfig"
	}
	return e.planObjects(ctx, p, name, false)
}

// stackClusterPlan is planObjects for the engine's path on a cluster the
// stack itself creates (GKE): after Pulumi's refresh has read the cloud
// resources, the Kubernetes objects of the spec are compared whole like
// anywhere else, on the cluster the stack's kubernetes provider reaches
// (the GCP layer's provider, through the kubeconfig it recorded:
// converge.ClientsFromKubeconfig). The GCP resources, and the Kubernetes
// objects only the cloud layer registers (Kata's installer, GKE's network
// logging: converge.CloudLayerURN), are left to the engine; any other object
// the spec no longer declares refuses, as everywhere.
func (e *Engine) stackClusterPlan(ctx context.Context, p *model.Platform, name string) (*converge.Plan, string) {
	return e.planObjects(ctx, p, name, true)
}

// planObjects checks everything that can be checked without the cluster
// and pairs each declared object with its state (converge.PlanObjects);
// reason is "" when the comparison may go on. stackCluster: see
// stackClusterPlan.
func (e *Engine) planObjects(ctx context.Context, p *model.Platform, name string, stackCluster bool) (*converge.Plan, string) {
	fail := func(reason string) (*converge.Plan, string) { return nil, reason }
	data, _, err := e.readStackState(name)
	var noReader *state.NoReaderError
	var corrupt *CorruptStateError
	switch {
	case errors.As(err, &noReader):
		return fail(noReader.Reason)
	case errors.As(err, &corrupt):
		return fail("the state does not parse")
	case err != nil:
		return fail("the state: " + oneLine(err))
	case data == nil:
		return fail("the stack does not exist yet")
	}
	if locks, err := e.Locks(name); err != nil || len(locks) > 0 {
		return fail("the stack is locked by another run")
	}
	dead, err := e.deadRuns(name)
	if err != nil {
		return fail("the run journal: " + oneLine(err))
	}
	if len(dead) > 0 {
		return fail(fmt.Sprintf("a %s of this stack (pid %d) died before it finished", dead[0].Op, dead[0].PID))
	}
	return converge.PlanObjects(ctx, data, p, stackCluster, readPassphrase)
}

// readPassphrase is the stack's secrets passphrase, from the same place the
// engine gives the CLI (passphraseEnv). The CLI trims a passphrase file.
func readPassphrase() (string, error) {
	env, err := passphraseEnv()
	if err != nil {
		return "", err
	}
	if v, ok := env["PULUMI_CONFIG_PASSPHRASE"]; ok {
		return v, nil
	}
	b, err := os.ReadFile(env["PULUMI_CONFIG_PASSPHRASE_FILE"])
	if err != nil {
		return "", fmt.Errorf("reading the secrets passphrase: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
