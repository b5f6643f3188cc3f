package converge

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
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

// RepairLive puts every drifted object of res back as Paddock applies it,
// says on out what it changed, and confirms with a second comparison that the
// objects now match. It needs the objects to exist (Missing ones are the
// engine's to create).
func RepairLive(ctx context.Context, out io.Writer, op string, res *Comparison) (int, error) {
	var drifted []*Object
	for _, o := range res.Objects {
		if o.Live != nil && len(o.Diffs) > 0 {
			drifted = append(drifted, o)
		}
	}
	if len(drifted) == 0 {
		return 0, nil
	}
	sort.Slice(drifted, func(i, j int) bool { return ObjectKey(drifted[i].Desired) < ObjectKey(drifted[j].Desired) })
	for _, o := range drifted {
		how := "repaired"
		var err error
		if o.Immutable != "" {
			how = "replaced"
			err = replaceObject(ctx, res.Clients.Dyn, o)
		} else {
			err = updateWhole(ctx, res.Clients.Dyn, o)
		}
		if err != nil {
			return 0, fmt.Errorf("repairing %s %s: %w", o.Desired.GetKind(), ObjectKey(o.Desired), err)
		}
		fmt.Fprintf(out, "paddock %s: %s %s %s, changed out of band:\n", op, how, o.Desired.GetKind(), ObjectKey(o.Desired))
		for _, f := range o.Diffs {
			fmt.Fprintf(out, "    %s\n", describeRepair(f))
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
func updateWhole(ctx context.Context, dyn dynamic.Interface, o *Object) error {
	live := o.Live
	for attempt := 0; ; attempt++ {
		body := o.Desired.DeepCopy()
		body.SetResourceVersion(live.GetResourceVersion())
		drift.CarryControllerFields(body.Object, live.Object)
		if st, ok := live.Object["status"]; ok {
			body.Object["status"] = st // kinds without a status subresource would lose it
		}
		_, err := resourceFor(dyn, o).Update(ctx, body, metav1.UpdateOptions{FieldManager: drift.RepairManager})
		if apierrors.IsConflict(err) && attempt < 3 {
			if live, err = resourceFor(dyn, o).Get(ctx, o.Desired.GetName(), metav1.GetOptions{}); err != nil {
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
func replaceObject(ctx context.Context, dyn dynamic.Interface, o *Object) error {
	kind := o.Desired.GetKind()
	if !replaceable[kind] {
		target := strings.ToLower(o.GVR.Resource)
		if o.GVR.Group != "" {
			target += "." + o.GVR.Group
		}
		target += " " + o.Desired.GetName()
		if ns := o.Desired.GetNamespace(); ns != "" {
			target += " -n " + ns
		}
		return fmt.Errorf("it must be replaced (%s), and deleting a %s would open the platform while it is recreated: at a quiet moment run `kubectl delete %s`, then `paddock up`", o.Immutable, kind, target)
	}
	uid := o.Live.GetUID()
	err := resourceFor(dyn, o).Delete(ctx, o.Desired.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := resourceFor(dyn, o).Get(ctx, o.Desired.GetName(), metav1.GetOptions{})
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
	body, err := o.Desired.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = resourceFor(dyn, o).Patch(ctx, o.Desired.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{Force: &force, FieldManager: providerManager(o)})
	return err
}

// providerManager is the field manager the kubernetes provider applies the
// object under: the one it recorded in the state, else the one that applied
// it live.
func providerManager(o *Object) string {
	if o.State != nil {
		if m, ok := o.State.Outputs["__fieldManager"].(string); ok && m != "" {
			return m
		}
	}
	if o.Live != nil {
		for _, mf := range o.Live.GetManagedFields() {
			if mf.Operation == metav1.ManagedFieldsOperationApply && strings.HasPrefix(mf.Manager, "pulumi-kubernetes") {
				return mf.Manager
			}
		}
	}
	return "pulumi-kubernetes"
}

// ConfirmRepaired compares the repaired objects again (with the stack's
// cache of stored forms, the file cache): a repair that did not hold (a
// mutating webhook or controller writing the change back) is an error
// naming the object, never a silent success.
func ConfirmRepaired(ctx context.Context, c *Clients, p *model.Platform, cache string, res *Comparison, out io.Writer) error {
	var again []*Object
	for _, o := range res.Objects {
		if len(o.Diffs) > 0 || o.Live == nil {
			again = append(again, &Object{Desired: o.Desired, GVR: o.GVR, State: o.State})
		}
	}
	if len(again) == 0 {
		return nil
	}
	after, err := CompareWhole(ctx, c, p, cache, again, FormsSubset, nil, out)
	if err != nil {
		return err
	}
	if err := refuseAdmissionReadd(out, p, after.Report); err != nil {
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
