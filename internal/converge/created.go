package converge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
)

// The post-up repair compares every declared object whole with the desired
// object as the API server stores it (stored.go), and asking the server is a
// dry-run update per object, each judged by every validating admission
// policy of the cluster: at 1,000 tenants 22,500 requests the run had already
// had answered. An object this run itself created was answered: the server
// stored the desired object, and what it stored then is the reference. So
// for the objects the run creates, the reference is the object as its
// creation stored it (a creation), not a dry-run.
//
// Only a creation that can be nothing but this run's own apply of the
// desired object counts; anything else is asked as before:
//
//   - It is a creation: a watch of the kind, started from a resourceVersion
//     read before the engine ran (no label selector: an object that only
//     gained the label is not new), saw the object ADDED, with the live
//     object's uid. An object that existed before (the provider's apply then
//     merges into it, keeping whatever it held) was not ADDED after.
//   - By the provider, of this run's desired object: the engine's event for
//     the resource says it was created in this run, with no earlier state,
//     from exactly the inputs Paddock declares (an object holding a
//     sensitive value is left to the dry-run), and the field manager the
//     provider drew for it at random (pulumi-kubernetes-<random>; no
//     earlier event of the run named it, and the object does not pin one
//     with pulumi.com/patchFieldManager). The creation's managedFields are
//     exactly that manager's one apply: nobody else could have created the
//     object under a name nobody knew before the provider's request.
//   - With nothing that rewrites writes: the cluster has no mutating
//     webhook or admission policy now (drift.AdmissionFingerprint) and none
//     was created, changed or deleted since before the engine ran (the same
//     watch on their kinds, without a gap). A creation that passed through
//     admission would carry what admission added, which the dry-run's split
//     (drift.Admission.Reference) takes out of a reference.
//
// The creation is then a reference like a dry-run's answer, and it only
// ever clears an object: one that differs from it is compared again with a
// fresh dry-run before anything is reported (compareLive believes no
// reference it did not just ask for when it disagrees), so whatever was
// written after the creation, however spelled, is judged as before.

// Creations records what a run created, from the cluster's watch and the
// engine's events. A nil *Creations answers nothing.
type Creations struct {
	dyn    dynamic.Interface
	cancel context.CancelFunc

	// declared are the desired objects: by watch key (gvr and
	// namespace/name) to keep only their creations, and by the engine's
	// key (type token :: namespace/name) to judge its events.
	declared map[string]bool
	byType   map[string]*unstructured.Unstructured

	mu    sync.Mutex
	added map[string]creation // watch key -> the last creation seen
	// applied are the resources the engine's events say this run created,
	// by the engine's key; tainted any other event named (or a second).
	applied map[string]appliedCreate
	tainted map[string]bool
	// known are the field managers an event showed of state from before
	// the run (a refresh, an update, a delete): not drawn by this run.
	known map[string]bool
	// noisy: a mutating admission object may have existed while the run
	// wrote (an event on their kinds, or a watch that lost its place).
	noisy bool
	// unserved are the admission kinds not served when the run began.
	unserved   []schema.GroupVersionResource
	unservedOK *bool
	answered   int
	// waitUntil bounds the wait for creations not delivered yet, from the
	// first answer on.
	waitUntil time.Time
}

// creation is an object as its creation stored it.
type creation struct {
	uid types.UID
	// manager is the creation's one field manager when its managedFields
	// are exactly one apply of the object itself, else "".
	manager string
	form    []byte // drift.Comparable of the object, as JSON
}

type appliedCreate struct {
	manager string
	inputs  bool // the inputs are the declared object's
}

// admissionKinds are the kinds whose objects rewrite writes.
var admissionKinds = []schema.GroupVersionResource{
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "mutatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "mutatingadmissionpolicybindings"},
}

// creationsStartWait bounds how long the run waits for the watches' first
// lists; a kind not anchored by then records nothing (its objects are
// asked), an admission kind makes the run noisy.
const creationsStartWait = 10 * time.Second

// StartCreations starts recording the creations of objs on the cluster dyn
// reaches, and returns once each kind's watch has its starting point: the
// engine must not write before. A kind the server does not serve yet (a
// CRD the run installs) is anchored when it is.
func StartCreations(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) *Creations {
	ctx, cancel := context.WithCancel(ctx)
	c := &Creations{dyn: dyn, cancel: cancel, declared: map[string]bool{}, byType: map[string]*unstructured.Unstructured{},
		added: map[string]creation{}, applied: map[string]appliedCreate{}, tainted: map[string]bool{}, known: map[string]bool{}}
	var kinds []schema.GroupVersionResource
	seen := map[schema.GroupVersionResource]bool{}
	for _, u := range objs {
		gvr := GVROf(u)
		c.declared[watchKey(gvr, ObjectKey(u))] = true
		c.byType[TypeToken(u.GetAPIVersion(), u.GetKind())+"::"+ObjectKey(u)] = u
		if !seen[gvr] {
			seen[gvr] = true
			kinds = append(kinds, gvr)
		}
	}
	var wg sync.WaitGroup
	for _, gvr := range kinds {
		wg.Add(1)
		go c.follow(ctx, gvr, false, wg.Done)
	}
	for _, gvr := range admissionKinds {
		wg.Add(1)
		go c.follow(ctx, gvr, true, wg.Done)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(creationsStartWait):
		c.mu.Lock()
		c.noisy = true // an admission kind may not be anchored
		c.mu.Unlock()
	case <-ctx.Done():
	}
	return c
}

func watchKey(gvr schema.GroupVersionResource, key string) string {
	return gvr.String() + "|" + key
}

func (c *Creations) Close() {
	if c != nil {
		c.cancel()
	}
}

// follow watches one kind from a resourceVersion listed before the run
// (ready is called once its watch is open, or cannot be yet), resuming
// where it stopped; a watch that cannot resume starts again from a new
// list, a gap: for an admission kind, the run is noisy.
func (c *Creations) follow(ctx context.Context, gvr schema.GroupVersionResource, admission bool, ready func()) {
	readyOnce := sync.OnceFunc(ready)
	defer readyOnce()
	res := c.dyn.Resource(gvr)
	rv, first := "", true
	for ctx.Err() == nil {
		if rv == "" {
			l, err := res.List(ctx, metav1.ListOptions{Limit: 1})
			switch {
			case err == nil && l.GetResourceVersion() != "":
				rv = l.GetResourceVersion()
				if admission && !first {
					c.setNoisy()
				}
			case admission && first && (apierrors.IsNotFound(err) || isNotServedErr(err)):
				c.mu.Lock()
				c.unserved = append(c.unserved, gvr)
				c.mu.Unlock()
				return
			case admission:
				c.setNoisy()
				return
			}
			first = false
			if rv == "" {
				readyOnce()
				sleepCtx(ctx, 2*time.Second) // not served yet: the run may install its CRD
				continue
			}
		}
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		readyOnce()
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
			}
			sleepCtx(ctx, time.Second)
			continue
		}
		rv = c.consume(w, gvr, admission, rv)
		w.Stop()
	}
}

// consume reads one watch until it ends, and returns the resourceVersion to
// resume from ("" to list again).
func (c *Creations) consume(w watch.Interface, gvr schema.GroupVersionResource, admission bool, rv string) string {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if st, ok := ev.Object.(*metav1.Status); ok && (st.Code == 410 || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
				return ""
			}
			return rv
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if v := u.GetResourceVersion(); v != "" {
			rv = v
		}
		switch {
		case ev.Type == watch.Bookmark:
		case admission:
			c.setNoisy()
		case ev.Type == watch.Added:
			c.record(gvr, u)
		}
	}
	return rv
}

// record keeps a declared object's creation.
func (c *Creations) record(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	key := watchKey(gvr, ObjectKey(u))
	if !c.declared[key] {
		return
	}
	cr := creation{uid: u.GetUID()}
	if mf := u.GetManagedFields(); len(mf) == 1 && mf[0].Operation == metav1.ManagedFieldsOperationApply && mf[0].Subresource == "" {
		cr.manager = mf[0].Manager
	}
	if b, err := json.Marshal(drift.Comparable(u.Object)); err == nil {
		cr.form = b
	}
	c.mu.Lock()
	c.added[key] = cr
	c.mu.Unlock()
}

func (c *Creations) setNoisy() {
	c.mu.Lock()
	c.noisy = true
	c.mu.Unlock()
}

// Tee records the engine's events on their way to the progress display.
func (c *Creations) Tee(in chan events.EngineEvent) chan events.EngineEvent {
	if c == nil {
		return in
	}
	out := make(chan events.EngineEvent)
	go func() {
		defer close(out)
		for ev := range in {
			c.event(ev)
			out <- ev
		}
	}()
	return out
}

// event notes a resource the run created, with the field manager the
// provider drew for it, and the managers of state from before the run.
func (c *Creations) event(ev events.EngineEvent) {
	if ev.ResOutputsEvent == nil {
		return
	}
	m := ev.ResOutputsEvent.Metadata
	if !strings.HasPrefix(m.Type, "kubernetes:") {
		return
	}
	key := m.Type + "::" + urnName(m.URN)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Op != apitype.OpCreate || m.Old != nil || m.New == nil || c.tainted[key] {
		for _, s := range []*apitype.StepEventStateMetadata{m.Old, m.New} {
			if s != nil {
				if mgr, ok := s.Outputs["__fieldManager"].(string); ok {
					c.known[mgr] = true
				}
			}
		}
		c.tainted[key] = true
		delete(c.applied, key)
		return
	}
	c.tainted[key] = true // a second event for it taints it
	d := c.byType[key]
	mgr, _ := m.New.Outputs["__fieldManager"].(string)
	if d == nil || mgr == "" {
		return
	}
	c.applied[key] = appliedCreate{manager: mgr, inputs: inputsEqual(comparableInputs(d.Object), comparableInputs(m.New.Inputs))}
}

// answerWait bounds how long an answer waits for a creation the watch has
// not delivered yet (the run's last objects, created a moment before).
const answerWait = 2 * time.Second

// answer is o's reference from its creation by this run, when the creation
// can only be this run's apply of o's desired object (see the top of this
// file); ok is false when it must be asked.
func (c *Creations) answer(ctx context.Context, o *Object, sensitive []string) (map[string]any, bool) {
	if c == nil || o.Live == nil || o.Live.GetUID() == "" || drift.HoldsSensitive(o.Desired.Object, sensitive) {
		return nil, false
	}
	if _, pinned := o.Desired.GetAnnotations()["pulumi.com/patchFieldManager"]; pinned {
		return nil, false
	}
	typed := TypeToken(o.Desired.GetAPIVersion(), o.Desired.GetKind()) + "::" + ObjectKey(o.Desired)
	c.mu.Lock()
	a, ok := c.applied[typed]
	fresh := ok && a.inputs && strings.HasPrefix(a.manager, "pulumi-kubernetes-") && !c.known[a.manager]
	if c.waitUntil.IsZero() {
		c.waitUntil = time.Now().Add(answerWait)
	}
	deadline := c.waitUntil
	c.mu.Unlock()
	if !fresh || !c.quiet(ctx) {
		return nil, false
	}
	key := watchKey(o.GVR, ObjectKey(o.Desired))
	for {
		c.mu.Lock()
		cr, ok := c.added[key]
		c.mu.Unlock()
		if ok && cr.uid == o.Live.GetUID() {
			if cr.manager != a.manager || cr.form == nil {
				return nil, false
			}
			var form map[string]any
			if json.Unmarshal(cr.form, &form) != nil {
				return nil, false
			}
			c.mu.Lock()
			c.answered++
			c.mu.Unlock()
			return form, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, false
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

// quiet reports whether no mutating admission object existed while the run
// wrote: none changed since the watches began, and a kind not served then
// is not served now.
func (c *Creations) quiet(ctx context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.noisy {
		return false
	}
	if c.unservedOK == nil {
		ok := true
		for _, gvr := range c.unserved {
			if _, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err == nil || !(apierrors.IsNotFound(err) || isNotServedErr(err)) {
				ok = false
			}
		}
		c.unservedOK = &ok
	}
	return *c.unservedOK
}

// AnsweredCount is how many references came from creations.
func (c *Creations) AnsweredCount() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

// isNotServedErr: a group/version the server does not serve.
func isNotServedErr(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || strings.Contains(err.Error(), "the server could not find the requested resource"))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
