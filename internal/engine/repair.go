package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
)

// This file is how `up` puts back what was changed out of band after
// Pulumi's update: the comparison and the repair are package converge's
// (its repair.go says why Pulumi cannot), run here on the cluster the
// stack is on.

// repairAfterUp runs after the engine's up: it compares every declared
// object whole with the live one (recomputing every stored form, which the
// run may have changed) and repairs what the engine's applies left, the
// fields other managers own. On a cluster the stack creates (GKE) it
// reaches the cluster through the kubeconfig the stack's kubernetes provider
// recorded, and says so when it cannot.
func (e *Engine) repairAfterUp(ctx context.Context, p *model.Platform, name string, rec *runRecord) (int, error) {
	return e.repairAfterUpWith(ctx, p, name, rec, nil)
}

// repairAfterUpWith is repairAfterUp taking the stored form of each object
// the run created from its creation (converge.Creations) rather than a dry-run,
// where it can.
func (e *Engine) repairAfterUpWith(ctx context.Context, p *model.Platform, name string, rec *runRecord, created *converge.Creations) (int, error) {
	var c *converge.Clients
	var err error
	switch {
	case p.Target.Kind == model.TargetGKE:
		plan, reason := e.stackClusterPlan(ctx, p, name)
		if reason == "" {
			c, err = converge.ClientsFromKubeconfig(plan.Kubeconfig)
			if err != nil {
				reason = oneLine(err)
			}
		}
		if reason != "" {
			fmt.Fprintf(e.opts.Out, "paddock up: fields written out of band by other managers are not compared: %s\n", reason)
			return 0, nil
		}
		created = nil // another cluster than the one the run watched
	case p.Target.Kubeconfig == "":
		fmt.Fprintf(e.opts.Out, "paddock up: fields written out of band by other managers are not compared: the target has no kubeconfig\n")
		return 0, nil
	default:
		if c, err = converge.ClientsFor(p); err != nil {
			return 0, err
		}
	}
	objs, err := converge.DeclaredObjects(p)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	res, err := e.compareWholeWith(ctx, c, p, name, objs, converge.FormsRecompute, created)
	if err != nil {
		return 0, err
	}
	// Two lines of at most 100 columns, and never the shape of the run's
	// summary line ("paddock up: ... in 2.1s"), which scripts read.
	fmt.Fprintf(e.opts.Out, "paddock up: every declared object compared whole after the update: %d, %.1fs\n  %d lists, %d gets, %d dry-runs; %d stored forms from this run's own creations\n",
		len(objs), time.Since(start).Seconds(), res.Lists, res.Gets, res.DryRuns, created.AnsweredCount())
	if err := rec.check(); err != nil {
		return 0, err
	}
	converge.KeepTrusted(e.opts.Out, "up", p, res)
	n, err := converge.RepairLive(ctx, e.opts.Out, "up", res)
	if err == nil && n > 0 {
		err = e.confirmRepaired(ctx, c, p, name, res)
	}
	return n, err
}

// confirmRepaired compares the repaired objects again
// (converge.ConfirmRepaired): a repair that did not hold (a mutating webhook
// or controller writing the change back) is an error naming the object,
// never a silent success.
func (e *Engine) confirmRepaired(ctx context.Context, c *converge.Clients, p *model.Platform, name string, res *converge.Comparison) error {
	return converge.ConfirmRepaired(ctx, c, p, e.storedFormsFile(name), res, e.opts.Out)
}
