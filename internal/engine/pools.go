package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/pools"
)

// This file is what `up` does after it applied the platform: a template
// change leaves the warm pools holding sandboxes built from the old
// template. Under update strategy Recreate the Agent Sandbox controller
// deletes the unclaimed ones and builds new ones; `up` waits until every
// such pool holds only current sandboxes, enough of them ready, so the next
// claim gets the fix the change brought. The one sandbox `up` deletes itself
// is an unclaimed one whose pod diverged from its template where the
// controller cannot see it (deleteDiverged); claimed sandboxes (a running
// session's) are neither waited for nor touched. A pool waived to OnReplenish is not waited for: `up` says how
// many stale sandboxes it keeps, and under which waiver.

// DefaultPoolWait is how long `up` waits for the warm pools to hold only
// current sandboxes: as long as the provider waits for a pool's replicas.
const DefaultPoolWait = 5 * time.Minute

// poolPoll is how often the pools are read again while `up` waits.
var poolPoll = time.Second

// poolClock times that wait; tests step a fake one to show the wait ends at
// its deadline and no sooner.
var poolClock clock.Clock = clock.RealClock{}

// poolWait is Options.PoolWait in force: zero means DefaultPoolWait, below
// zero means report only.
func (e *Engine) poolWait() time.Duration {
	if e.opts.PoolWait == 0 {
		return DefaultPoolWait
	}
	return e.opts.PoolWait
}

// afterUp finishes a successful up (res, nil) by settling the warm pools;
// it passes a failed or empty one through.
func (e *Engine) afterUp(ctx context.Context, p *model.Platform, since time.Time, res *Result, err error) (*Result, error) {
	if err != nil || res == nil || !hasWarmPools(p) {
		return res, err
	}
	c, cerr := converge.ClientsFor(p)
	if errors.Is(cerr, converge.ErrNoKubeconfig) {
		fmt.Fprintln(e.opts.Out, "paddock up: the warm pools' sandboxes were not checked against their templates: the target has no kubeconfig; `paddock verify` checks them (V07)")
		return res, nil
	}
	if cerr != nil {
		return nil, cerr
	}
	settling := time.Now()
	if err := settlePools(ctx, pools.Clients{Dyn: c.Dyn, Kube: c.Kube}, e.opts.Out, p, since, e.poolWait()); err != nil {
		return nil, fmt.Errorf("up of stack %q applied the spec, but %w", res.Stack, err)
	}
	res.Duration += time.Since(settling)
	return res, nil
}

func hasWarmPools(p *model.Platform) bool {
	for _, t := range p.Tenants {
		if len(t.WarmPools) > 0 {
			return true
		}
	}
	return false
}

// declaredPool is one warm pool of the spec.
type declaredPool struct {
	tenant *model.Tenant
	pool   *model.WarmPool
}

func (d declaredPool) key() string { return d.tenant.Namespace + "/" + d.pool.Name }

// readPlatformPools reads the live state of p's warm pools: from the one
// namespace that has them, or in one LIST per kind across all namespaces.
func readPlatformPools(ctx context.Context, c pools.Clients, declared []declaredPool) (map[string]*pools.Pool, error) {
	namespaces := map[string]bool{}
	for _, d := range declared {
		namespaces[d.tenant.Namespace] = true
	}
	ns := ""
	if len(namespaces) == 1 {
		ns = declared[0].tenant.Namespace
	}
	live, err := pools.Read(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	out := map[string]*pools.Pool{}
	for i := range live {
		out[live[i].Key()] = &live[i]
	}
	return out, nil
}

// settlePools waits (up to wait; below zero not at all) until every
// Recreate pool of p that is being refilled holds only current sandboxes
// and its replicas of them ready, printing progress to out, and says what
// the OnReplenish pools keep. since is when this up began (see refilling).
func settlePools(ctx context.Context, c pools.Clients, out io.Writer, p *model.Platform, since time.Time, wait time.Duration) error {
	var declared []declaredPool
	for i := range p.Tenants {
		t := &p.Tenants[i]
		for j := range t.WarmPools {
			declared = append(declared, declaredPool{tenant: t, pool: &t.WarmPools[j]})
		}
	}
	live, err := readPlatformPools(ctx, c, declared)
	if err != nil {
		return fmt.Errorf("reading the warm pools: %w", err)
	}
	var rep *policy.Report // judged only when a pool keeps stale sandboxes
	var waitFor []declaredPool
	var unjudged []string
	for _, d := range declared {
		lp := live[d.key()]
		switch {
		case lp == nil:
			unjudged = append(unjudged, fmt.Sprintf("warm pool %s is not in the cluster", d.key()))
			continue
		case lp.Problem != "":
			unjudged = append(unjudged, fmt.Sprintf("warm pool %s cannot be judged: %s", d.key(), lp.Problem))
			continue
		}
		if lp.Diverged > 0 {
			n, err := deleteDiverged(ctx, c, out, lp)
			if err != nil {
				return err
			}
			if n > 0 {
				waitFor = append(waitFor, d)
				continue
			}
		}
		if d.pool.Strategy() != model.UpdateRecreate {
			if lp.Stale > 0 {
				if rep == nil {
					rep = policy.Check(p, time.Now())
				}
				fmt.Fprintf(out, "paddock up: %d stale sandbox(es) remain in warm pool %s, built from an older template: %s (update strategy %s, %s)\n",
					lp.Stale, d.key(), strings.Join(lp.StaleNames(), ", "), d.pool.Strategy(), waiverText(rep, d))
			}
			continue
		}
		if refilling(lp, since) {
			waitFor = append(waitFor, d)
		}
	}
	if len(unjudged) > 0 {
		return fmt.Errorf("%s: the next claim may get a sandbox no one checked; `paddock verify` shows the pools (V07), and `paddock up` again once they are whole", strings.Join(unjudged, "; "))
	}
	if len(waitFor) == 0 {
		return nil
	}
	if wait < 0 {
		for _, d := range waitFor {
			fmt.Fprintf(out, "paddock up: not waiting for warm pool %s (%s)\n", d.key(), describePool(live[d.key()]))
		}
		return nil
	}
	start := poolClock.Now()
	deadline := start.Add(wait)
	last := map[string]string{}
	for _, d := range waitFor {
		lp := live[d.key()]
		line := describePool(lp)
		fmt.Fprintf(out, "paddock up: warm pool %s is being refilled from template %q (update strategy Recreate): %s; waiting up to %s\n", d.key(), lp.Template, line, wait)
		last[d.key()] = line
	}
	for {
		var pending []declaredPool
		for _, d := range waitFor {
			lp := live[d.key()]
			if lp != nil && lp.Fresh() {
				if last[d.key()] != "" {
					fmt.Fprintf(out, "paddock up: warm pool %s holds only current sandboxes, %d/%d ready (%.1fs)\n", d.key(), lp.Ready, lp.Desired, poolClock.Since(start).Seconds())
					last[d.key()] = ""
				}
				continue
			}
			pending = append(pending, d)
			line := "it is gone"
			if lp != nil {
				line = describePool(lp)
			}
			if line != last[d.key()] {
				fmt.Fprintf(out, "paddock up: warm pool %s: %s (%.1fs)\n", d.key(), line, poolClock.Since(start).Seconds())
				last[d.key()] = line
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if !poolClock.Now().Before(deadline) {
			return notFresh(pending, live, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poolClock.After(min(poolPoll, deadline.Sub(poolClock.Now()))):
		}
		if live, err = readPlatformPools(ctx, c, waitFor); err != nil {
			return fmt.Errorf("reading the warm pools: %w", err)
		}
	}
}

// deleteDiverged deletes the unclaimed sandboxes of lp whose pods no longer
// run what the template says (pools.Sandbox.Diverged): the controller judges
// a sandbox by its labels, which still read current, so it would serve one to
// the next claim. Each delete names the sandbox's UID, so a successor with
// the same name is never hit; one already gone counts as deleted. The
// controller then builds a replacement from the template, under whatever
// update strategy the pool has: a waiver that keeps older templates keeps no
// tampered pod. It returns how many it deleted.
func deleteDiverged(ctx context.Context, c pools.Clients, out io.Writer, lp *pools.Pool) (int, error) {
	n := 0
	for _, s := range lp.Sandboxes {
		if !s.Diverged {
			continue
		}
		uid := s.UID
		err := c.Dyn.Resource(agentsandbox.Sandboxes).Namespace(lp.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return n, fmt.Errorf("warm pool %s holds sandbox %s, which %s, and deleting it failed: %w; delete it by hand (kubectl delete sandbox -n %s %s)", lp.Key(), s.Name, s.Why, err, lp.Namespace, s.Name)
		}
		fmt.Fprintf(out, "paddock up: deleted sandbox %s of warm pool %s: %s; the controller builds a new one from the template\n", s.Name, lp.Key(), s.Why)
		n++
	}
	return n, nil
}

// refilling reports whether a pool is being brought to the template: it
// holds stale sandboxes or ones being deleted, or it is short of ready
// sandboxes while its template was written, or its sandboxes made, during
// this up (which began at since). The controller deletes the stale ones
// and creates their replacements apart: the pool may be caught between.
func refilling(lp *pools.Pool, since time.Time) bool {
	if lp.Stale > 0 || lp.Terminating > 0 {
		return true
	}
	if lp.Ready >= lp.Desired {
		return false
	}
	// managedFields times are whole seconds.
	if !lp.TemplateWritten.Before(since.Truncate(time.Second)) {
		return true
	}
	for _, s := range lp.Sandboxes {
		if s.State == pools.Current && !s.Created.Before(since) {
			return true
		}
	}
	return false
}

// describePool is one line on a pool's sandboxes.
func describePool(lp *pools.Pool) string {
	parts := []string{fmt.Sprintf("%d/%d current sandboxes ready", lp.Ready, lp.Desired)}
	if lp.Stale > 0 {
		parts = append(parts, fmt.Sprintf("%d stale (%s)", lp.Stale, strings.Join(lp.StaleNames(), ", ")))
	}
	if lp.Terminating > 0 {
		parts = append(parts, fmt.Sprintf("%d being deleted", lp.Terminating))
	}
	if lp.Claimed > 0 {
		parts = append(parts, fmt.Sprintf("%d claimed (left alone)", lp.Claimed))
	}
	return strings.Join(parts, ", ")
}

// notFresh is the error of a wait that ran out: each pool, its stale
// sandboxes and why they are stale, and what to do.
func notFresh(pending []declaredPool, live map[string]*pools.Pool, wait time.Duration) error {
	sort.Slice(pending, func(i, j int) bool { return pending[i].key() < pending[j].key() })
	var b strings.Builder
	fmt.Fprintf(&b, "%d warm pool(s) did not come to hold only current sandboxes within %s:", len(pending), wait)
	for _, d := range pending {
		lp := live[d.key()]
		if lp == nil {
			fmt.Fprintf(&b, "\n  warm pool %s: it is gone from the cluster", d.key())
			continue
		}
		fmt.Fprintf(&b, "\n  warm pool %s: %s (kubectl get sandboxes,pods -n %s)", d.key(), describePool(lp), d.tenant.Namespace)
		for _, s := range lp.Sandboxes {
			if s.State == pools.Stale {
				fmt.Fprintf(&b, "\n    stale sandbox %s: %s", s.Name, s.Why)
			}
		}
	}
	b.WriteString("\nUnder update strategy Recreate the Agent Sandbox controller deletes the stale sandboxes and builds new ones; Paddock deletes only those whose pods diverged from the template where the controller cannot see it. " +
		"Check that the controller runs and the new sandboxes' pods start (`paddock verify` shows the pools, V07), " +
		"then run `paddock up` again, or give it longer with --pool-wait.")
	return errors.New(b.String())
}

// waiverText says which waiver lets the pool keep stale sandboxes.
func waiverText(rep *policy.Report, d declaredPool) string {
	if rep != nil {
		if w := policy.StaleSandboxWaiver(rep, d.tenant, d.pool); w != nil {
			return "waived: " + w.Reason
		}
	}
	return "not waived"
}
