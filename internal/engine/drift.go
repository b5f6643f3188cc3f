package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// Drift compares the live cluster with the platform's stack and changes
// nothing: a preview with refresh (the refreshed state is never saved) whose
// steps are what `up` would do. Each step on a resource the stack owns
// becomes a drift.Resource with the changed field paths, the declared value
// (the program's inputs) and the live one (the refreshed object), and whether
// the difference comes from the cluster or from a spec change not applied
// yet. The stack must exist. The sweep of objects outside the stack is
// drift.Sweep's.
func (e *Engine) Drift(ctx context.Context, p *model.Platform) (*drift.Report, error) {
	if rep := e.fastDrift(ctx, p); rep != nil {
		e.showTrust(ctx, p, rep)
		return rep, nil
	}
	s, err := e.open(ctx, e.stackName(p), e.programFor(p), false)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ch := make(chan events.EngineEvent)
	c := newDriftCollector()
	go c.consume(ch)
	_, err = s.Preview(ctx, optpreview.Refresh(), optpreview.Parallel(e.parallel()), optpreview.EventStreams(ch), optpreview.SuppressProgress())
	c.waitAfter(err)
	if err != nil {
		return nil, opError("drift check", s.Name(), e.hideBackendPassword(err))
	}
	rep := &drift.Report{Platform: p.Name, Stack: s.Name(), Target: string(p.Target.Kind)}
	rep.Resources, rep.Checked = c.resources()
	e.addWholeObjectDrift(ctx, p, s.Name(), rep)
	e.showTrust(ctx, p, rep)
	rep.Compare = time.Since(start)
	return rep, nil
}

// showTrust puts the spec's trust_admission blocks into the report, with
// what each trusted object can rewrite now, and keeps (out of the drift)
// what only trusted objects could have added to Paddock's objects.
func (e *Engine) showTrust(ctx context.Context, p *model.Platform, rep *drift.Report) {
	if len(p.TrustedAdmission) == 0 {
		return
	}
	trust := drift.TrustNotes(p)
	if c, err := converge.ClientsFor(p); err != nil {
		fmt.Fprintf(e.opts.Out, "paddock drift: the trusted admission objects were not read: %s\n", oneLine(err))
	} else if trust, err = drift.AdmissionTrust(ctx, p, c.Kube); err != nil {
		fmt.Fprintf(e.opts.Out, "paddock drift: the trusted admission objects were not read: %s\n", oneLine(err))
		trust = drift.TrustNotes(p)
	}
	rep.Resources, rep.Trusted = drift.KeepTrusted(p, rep.Resources, trust)
}

// addWholeObjectDrift makes the whole-object comparison the answer for
// what changed in the cluster, as on the fast path: Pulumi's diff trims the
// live object to the inputs it recorded, so a field another manager added is
// invisible to it. It runs when the spec is what the stack last applied
// (otherwise a spec change would read as a change in the cluster), and says
// when it cannot.
func (e *Engine) addWholeObjectDrift(ctx context.Context, p *model.Platform, name string, rep *drift.Report) {
	objs, c, reason := e.enginePathObjects(ctx, p, name)
	var res *converge.Comparison
	if reason == "" {
		var err error
		if res, err = e.compareWhole(ctx, c, p, name, objs, converge.FormsCached); err != nil {
			reason = oneLine(err)
		}
	}
	if reason != "" {
		fmt.Fprintf(e.opts.Out, "paddock drift: fields outside the spec not compared: %s\n", reason)
		rep.Partial = reason
		return
	}
	rep.Resources = mergeDrift(res.Report.Resources, rep.Resources)
}

// enginePathObjects is, after the engine's refresh, the spec's objects
// paired with their state and the clients of their cluster: the target's
// kubeconfig, or for a cluster the stack creates (GKE) the kubeconfig its
// kubernetes provider recorded (stackClusterPlan). reason says why not.
func (e *Engine) enginePathObjects(ctx context.Context, p *model.Platform, name string) ([]*converge.Object, *converge.Clients, string) {
	if p.Target.Kind == model.TargetGKE {
		plan, reason := e.stackClusterPlan(ctx, p, name)
		if reason != "" {
			return nil, nil, reason
		}
		c, err := converge.ClientsFromKubeconfig(plan.Kubeconfig)
		if err != nil {
			return nil, nil, oneLine(err)
		}
		return plan.Objects, c, ""
	}
	objs, _, reason := e.fastPlan(ctx, p, name)
	if reason != "" {
		return nil, nil, reason
	}
	c, err := converge.ClientsFor(p)
	if err != nil {
		return nil, nil, oneLine(err)
	}
	return objs, c, ""
}

// mergeDrift is the whole-object comparison's resources, with Pulumi's
// word on which must be replaced, and any resource only Pulumi reports.
func mergeDrift(whole, engine []drift.Resource) []drift.Resource {
	out := append([]drift.Resource(nil), whole...)
	for _, r := range engine {
		i := slices.IndexFunc(out, func(w drift.Resource) bool { return w.Kind == r.Kind && w.Name == r.Name })
		switch {
		case i < 0:
			out = append(out, r)
		case r.Change == drift.Replaced:
			out[i].Change, out[i].Repair = drift.Replaced, r.Repair
		}
	}
	return out
}

// driftCollector gathers the steps of a refresh-and-preview run.
type driftCollector struct {
	mu sync.Mutex
	// inState are the URNs the refresh read: the resources the stack had.
	inState map[string]bool
	// applied are their inputs as the last update applied them (the refresh
	// replaces a resource's inputs with what it read).
	applied map[string]map[string]any
	// steps are the last step planned for each resource, by URN.
	steps map[string]apitype.StepEventMetadata
	// same are the custom resources with no change.
	same map[string]bool
	done chan struct{}
}

func newDriftCollector() *driftCollector {
	return &driftCollector{inState: map[string]bool{}, applied: map[string]map[string]any{}, steps: map[string]apitype.StepEventMetadata{}, same: map[string]bool{}, done: make(chan struct{})}
}

func (c *driftCollector) consume(ch <-chan events.EngineEvent) {
	defer close(c.done)
	for ev := range ch {
		c.handle(ev)
	}
}

func (c *driftCollector) waitAfter(err error) {
	if err == nil {
		<-c.done
		return
	}
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
}

func (c *driftCollector) handle(ev events.EngineEvent) {
	var m apitype.StepEventMetadata
	switch {
	case ev.ResourcePreEvent != nil:
		m = ev.ResourcePreEvent.Metadata
	case ev.ResOutputsEvent != nil:
		m = ev.ResOutputsEvent.Metadata
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if isComponent(m.Type) {
		return
	}
	switch m.Op {
	case apitype.OpRefresh, apitype.OpRead:
		c.inState[m.URN] = true
		if _, ok := c.applied[m.URN]; !ok && m.Old != nil && ev.ResourcePreEvent != nil {
			c.applied[m.URN] = m.Old.Inputs
		}
	case apitype.OpSame:
		c.same[m.URN] = true
	case apitype.OpUpdate, apitype.OpCreate, apitype.OpDelete, apitype.OpReplace,
		apitype.OpCreateReplacement, apitype.OpDeleteReplaced:
		prev, seen := c.steps[m.URN]
		// A replacement is several steps; keep the one that carries the diff.
		if seen && isReplace(prev.Op) && len(prev.DetailedDiff) > 0 {
			return
		}
		if seen && isReplace(prev.Op) && !isReplace(m.Op) {
			return
		}
		c.steps[m.URN] = m
	}
}

func isReplace(op apitype.OpType) bool {
	return op == apitype.OpReplace || op == apitype.OpCreateReplacement || op == apitype.OpDeleteReplaced
}

// resources turns the steps into the report's resources, and counts the
// resources compared.
func (c *driftCollector) resources() ([]drift.Resource, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []drift.Resource
	for urn, m := range c.steps {
		applied, ok := c.applied[urn]
		if !ok && m.Old != nil {
			applied = m.Old.Inputs
		}
		out = append(out, toDrift(m, c.inState[urn], applied))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URN < out[j].URN })
	checked := map[string]bool{}
	for urn := range c.same {
		checked[urn] = true
	}
	for urn := range c.steps {
		checked[urn] = true
	}
	return out, len(checked)
}

// toDrift describes one planned step as drift.
func toDrift(m apitype.StepEventMetadata, wasInState bool, applied map[string]any) drift.Resource {
	r := drift.Resource{URN: m.URN, Type: m.Type, Cause: drift.CauseCluster}
	r.Kind, r.Name = objectName(m)
	switch {
	case m.Op == apitype.OpCreate && wasInState:
		r.Change, r.Repair = drift.Missing, "`paddock up` recreates it"
	case m.Op == apitype.OpCreate:
		r.Change, r.Cause, r.Repair = drift.NotApplied, drift.CauseSpec, "`paddock up` creates it"
	case m.Op == apitype.OpDelete:
		r.Change, r.Cause, r.Repair = drift.NoLongerDeclared, drift.CauseSpec, "`paddock up` deletes it"
	case isReplace(m.Op):
		r.Change, r.Repair = drift.Replaced, "`paddock up` deletes it and creates it as declared"
	default:
		r.Change, r.Repair = drift.Modified, "`paddock up` sets the declared values back"
	}
	if r.Change != drift.Modified && r.Change != drift.Replaced {
		return r
	}
	var newIn, live map[string]any
	if m.New != nil {
		newIn = m.New.Inputs
	}
	if m.Old != nil {
		live = m.Old.Outputs
		if live == nil {
			live = m.Old.Inputs
		}
	}
	paths := make([]string, 0, len(m.DetailedDiff))
	for p := range m.DetailedDiff {
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		paths = append(paths, m.Diffs...)
	}
	sort.Strings(paths)
	spec := len(paths) > 0
	for _, p := range paths {
		f := drift.Field{Path: p, Cause: drift.CauseCluster}
		f.Declared, _ = lookup(newIn, p)
		f.Live, _ = lookup(live, p)
		if was, _ := lookup(applied, p); !reflect.DeepEqual(was, f.Declared) {
			f.Cause = drift.CauseSpec
		}
		spec = spec && f.Cause == drift.CauseSpec
		r.Fields = append(r.Fields, f)
	}
	if spec {
		r.Cause = drift.CauseSpec
	}
	return r
}

// objectName is the Kubernetes kind and namespace/name of a step's object.
func objectName(m apitype.StepEventMetadata) (kind, name string) {
	for _, st := range []*apitype.StepEventStateMetadata{m.New, m.Old} {
		if st == nil {
			continue
		}
		for _, props := range []map[string]any{st.Inputs, st.Outputs} {
			k, _ := props["kind"].(string)
			md, _ := props["metadata"].(map[string]any)
			n, _ := md["name"].(string)
			if k == "" || n == "" {
				continue
			}
			if ns, _ := md["namespace"].(string); ns != "" {
				n = ns + "/" + n
			}
			return k, n
		}
	}
	// Fall back on the URN: ...::kubernetes:core/v1:Namespace::agents-team-a
	t := urnType(m.URN)
	if i := strings.LastIndex(t, ":"); i >= 0 {
		t = t[i+1:]
	}
	n := m.URN
	if i := strings.LastIndex(n, "::"); i >= 0 {
		n = n[i+2:]
	}
	return t, n
}

// lookup reads a property path (spec.template.spec.containers[0].image,
// metadata.labels["a/b"]) in an event's property map.
func lookup(props map[string]any, path string) (any, bool) {
	pp, err := resource.ParsePropertyPath(path)
	if err != nil || props == nil {
		return nil, false
	}
	var cur any = props
	for _, el := range pp {
		if converge.IsSecret(cur) {
			return converge.SecretValue, true // the rest of the path is inside a secret
		}
		switch k := el.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			a, ok := cur.([]any)
			if !ok || k < 0 || k >= len(a) {
				return nil, false
			}
			cur = a[k]
		default:
			return nil, false
		}
	}
	if converge.IsSecret(cur) {
		return converge.SecretValue, true
	}
	return cur, true
}
