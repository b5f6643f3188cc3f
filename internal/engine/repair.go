package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// This file is how `up` puts back what was changed out of band. Pulumi
// cannot: its server-side apply owns only the fields the spec declares, so a
// rule added to a policy, a matchCondition on a guardrail or a volume slipped
// into a template under another field manager survives every apply. The
// repair writes each drifted object whole, as Paddock builds it, over the
// live one (an update with the live resourceVersion, so a concurrent writer
// is never overwritten blind), keeping only what the object's controllers
// own. An update is atomic, so no tenant is ever without its fence while it
// is repaired. Objects whose changed fields cannot be updated in place are
// replaced only where deleting them takes rights away and opens nothing
// (replaceable); anything else stops `up` with what to do.

// replaceable are the kinds a repair may delete and create again: deleting
// one only takes rights away, or fails closed. A RuntimeClass swapped to
// another handler (runc: the host kernel) is one: while it is gone the API
// server refuses every pod that names it, so none is admitted onto the
// wrong handler in between.
var replaceable = map[string]bool{"RoleBinding": true, "ClusterRoleBinding": true, "Role": true, "ClusterRole": true, "RuntimeClass": true}

// repairLive puts every drifted object of res back as Paddock applies it,
// says what it changed, and confirms with a second comparison that the
// objects now match. It needs the objects to exist (Missing ones are the
// engine's to create).
func (e *Engine) repairLive(ctx context.Context, op string, res *fastResult) (int, error) {
	var drifted []*fastObject
	for _, o := range res.objs {
		if o.live != nil && len(o.diffs) > 0 {
			drifted = append(drifted, o)
		}
	}
	if len(drifted) == 0 {
		return 0, nil
	}
	sort.Slice(drifted, func(i, j int) bool { return objectKey(drifted[i].desired) < objectKey(drifted[j].desired) })
	for _, o := range drifted {
		how := "repaired"
		var err error
		if o.immutable != "" {
			how = "replaced"
			err = replaceObject(ctx, res.clients.dyn, o)
		} else {
			err = updateWhole(ctx, res.clients.dyn, o)
		}
		if err != nil {
			return 0, fmt.Errorf("repairing %s %s: %w", o.desired.GetKind(), objectKey(o.desired), err)
		}
		fmt.Fprintf(e.opts.Out, "paddock %s: %s %s %s, changed out of band:\n", op, how, o.desired.GetKind(), objectKey(o.desired))
		for _, f := range o.diffs {
			fmt.Fprintf(e.opts.Out, "    %s\n", describeRepair(f))
		}
	}
	return len(drifted), nil
}

// describeRepair says what the repair did to one field.
func describeRepair(f drift.Field) string {
	var s string
	switch {
	case f.Declared == nil:
		s = fmt.Sprintf("removed %s: %s", f.Path, drift.Value(f.Live))
	case f.Live == nil:
		s = fmt.Sprintf("restored %s: %s", f.Path, drift.Value(f.Declared))
	default:
		s = fmt.Sprintf("set %s back: %s → %s", f.Path, drift.Value(f.Live), drift.Value(f.Declared))
	}
	if by := f.By(); by != "" {
		s += " (written by " + by + ")"
	}
	if a := f.AdmissionText(); a != "" {
		s += " (" + a + ")"
	}
	return s
}

// updateWhole writes the desired object over the live one, keeping what
// its controllers own, under the live resourceVersion (re-read on a
// conflict).
func updateWhole(ctx context.Context, dyn dynamic.Interface, o *fastObject) error {
	live := o.live
	for attempt := 0; ; attempt++ {
		body := o.desired.DeepCopy()
		body.SetResourceVersion(live.GetResourceVersion())
		drift.CarryControllerFields(body.Object, live.Object)
		if st, ok := live.Object["status"]; ok {
			body.Object["status"] = st // kinds without a status subresource would lose it
		}
		_, err := resourceFor(dyn, o).Update(ctx, body, metav1.UpdateOptions{FieldManager: drift.RepairManager})
		if apierrors.IsConflict(err) && attempt < 3 {
			if live, err = resourceFor(dyn, o).Get(ctx, o.desired.GetName(), metav1.GetOptions{}); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// replaceObject deletes the live object (that very one: a precondition on
// its uid) and creates the desired one, applied under the provider's field
// manager so the next `up` owns it as before.
func replaceObject(ctx context.Context, dyn dynamic.Interface, o *fastObject) error {
	kind := o.desired.GetKind()
	if !replaceable[kind] {
		target := strings.ToLower(o.gvr.Resource)
		if o.gvr.Group != "" {
			target += "." + o.gvr.Group
		}
		target += " " + o.desired.GetName()
		if ns := o.desired.GetNamespace(); ns != "" {
			target += " -n " + ns
		}
		return fmt.Errorf("it must be replaced (%s), and deleting a %s would open the platform while it is recreated: at a quiet moment run `kubectl delete %s`, then `paddock up`", o.immutable, kind, target)
	}
	uid := o.live.GetUID()
	err := resourceFor(dyn, o).Delete(ctx, o.desired.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := resourceFor(dyn, o).Get(ctx, o.desired.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the old object was not gone within a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	body, err := o.desired.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = resourceFor(dyn, o).Patch(ctx, o.desired.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{Force: &force, FieldManager: providerManager(o)})
	return err
}

// providerManager is the field manager the kubernetes provider applies the
// object under: the one it recorded in the state, else the one that applied
// it live.
func providerManager(o *fastObject) string {
	if o.state != nil {
		if m, ok := o.state.Outputs["__fieldManager"].(string); ok && m != "" {
			return m
		}
	}
	if o.live != nil {
		for _, mf := range o.live.GetManagedFields() {
			if mf.Operation == metav1.ManagedFieldsOperationApply && strings.HasPrefix(mf.Manager, "pulumi-kubernetes") {
				return mf.Manager
			}
		}
	}
	return "pulumi-kubernetes"
}

// declaredFastObjects are the objects manifests.Build makes of p, for a
// comparison without the state (after the engine ran).
func declaredFastObjects(p *model.Platform) ([]*fastObject, error) {
	built, err := manifests.Build(p)
	if err != nil {
		return nil, err
	}
	var out []*fastObject
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			out = append(out, &fastObject{desired: u, gvr: gvrOf(u)})
		}
	}
	return out, nil
}

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
// the run created from its creation (created.go) rather than a dry-run,
// where it can.
func (e *Engine) repairAfterUpWith(ctx context.Context, p *model.Platform, name string, rec *runRecord, created *creations) (int, error) {
	var c *clusterClients
	var err error
	switch {
	case p.Target.Kind == model.TargetGKE:
		plan, reason := e.stackClusterPlan(ctx, p, name)
		if reason == "" {
			c, err = clientsFromKubeconfig(plan.kubeconfig)
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
		if c, err = clientsFor(p); err != nil {
			return 0, err
		}
	}
	objs, err := declaredFastObjects(p)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	res, err := e.compareWholeWith(ctx, c, p, name, objs, formsRecompute, created)
	if err != nil {
		return 0, err
	}
	// Two lines of at most 100 columns, and never the shape of the run's
	// summary line ("paddock up: ... in 2.1s"), which scripts read.
	fmt.Fprintf(e.opts.Out, "paddock up: every declared object compared whole after the update: %d, %.1fs\n  %d lists, %d gets, %d dry-runs; %d stored forms from this run's own creations\n",
		len(objs), time.Since(start).Seconds(), res.Lists, res.Gets, res.DryRuns, created.answeredCount())
	if err := rec.check(); err != nil {
		return 0, err
	}
	e.keepTrusted("up", p, res)
	n, err := e.repairLive(ctx, "up", res)
	if err == nil && n > 0 {
		err = e.confirmRepaired(ctx, c, p, name, res)
	}
	return n, err
}

// confirmRepaired compares the repaired objects again: a repair that did not
// hold (a mutating webhook or controller writing the change back) is an
// error naming the object, never a silent success.
func (e *Engine) confirmRepaired(ctx context.Context, c *clusterClients, p *model.Platform, name string, res *fastResult) error {
	var again []*fastObject
	for _, o := range res.objs {
		if len(o.diffs) > 0 || o.live == nil {
			again = append(again, &fastObject{desired: o.desired, gvr: o.gvr, state: o.state})
		}
	}
	if len(again) == 0 {
		return nil
	}
	after, err := e.compareWhole(ctx, c, p, name, again, formsSubset)
	if err != nil {
		return err
	}
	if err := e.refuseAdmissionReadd(p, after.Report); err != nil {
		return err
	}
	if len(after.Report.Resources) > 0 {
		r := after.Report.Resources[0]
		var paths []string
		for _, f := range r.Fields {
			paths = append(paths, f.Path+" by "+f.By())
		}
		return fmt.Errorf("%s %s differs again right after its repair (%s): something in the cluster writes it back; find the writer and stop it", r.Kind, r.Name, strings.Join(paths, ", "))
	}
	return nil
}
