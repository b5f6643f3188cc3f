package drift

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// OverdueGrace is how long past its end a session may still exist before
// S08 reports it: the controller acts on a shutdownTime within seconds, and
// this machine's clock may run a little ahead of the API server's.
const OverdueGrace = time.Minute

// Session lifetimes (S08). Admission holds a session's end only when the
// claim or sandbox is written; what is live can still outlive it: a claim
// admitted before the guardrail held or under a longer max_ttl, a Sandbox
// created directly, or any session the controller did not end because it
// is down, behind, or a finalizer holds the deletion. The judge reads what
// is live, whoever wrote it:
//
//   - a claim whose end (its shutdownTime, and with max_ttl its creation +
//     max_ttl, whichever is sooner) passed more than OverdueGrace ago and
//     that still exists with shutdown policy Delete, or still controls a
//     sandbox the controller has not marked expired;
//   - with max_ttl, a claim with no shutdownTime or one beyond creation +
//     max_ttl (nothing ends it in time);
//   - a sandbox no claim or warm pool controls (a session opened without a
//     claim), by the same two tests; one the controller marked expired has
//     no pod left and is not reported. A claim's or a warm pool's sandbox is
//     judged through its owner: a claim ends it, an idle pool member holds
//     no session.
//
// dyn nil, or the Agent Sandbox CRDs not served, finds nothing.
func Lifetimes(ctx context.Context, t model.Tenant, dyn dynamic.Interface, now time.Time) ([]Finding, error) {
	if dyn == nil {
		return nil, nil
	}
	claims, err := listOrNone(ctx, t.Namespace, agentsandbox.SandboxClaims.GroupResource().String(), func(ctx context.Context) (*unstructured.UnstructuredList, error) {
		return dyn.Resource(agentsandbox.SandboxClaims).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
	})
	if err != nil {
		return nil, err
	}
	sandboxes, err := listOrNone(ctx, t.Namespace, agentsandbox.Sandboxes.GroupResource().String(), func(ctx context.Context) (*unstructured.UnstructuredList, error) {
		return dyn.Resource(agentsandbox.Sandboxes).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
	})
	if err != nil {
		return nil, err
	}
	s := newSessions(t, now)
	for i := range sandboxes {
		s.sandbox(&sandboxes[i])
	}
	for i := range claims {
		s.claim(&claims[i])
	}
	return s.findings(), nil
}

// sessions judges one tenant's claims and the sandboxes opened without one
// as they are read, keeping only the findings and the names of the claims'
// running sandboxes: every sandbox is read before any claim, since a claim
// is judged with the sandboxes it still runs.
type sessions struct {
	t       model.Tenant
	now     time.Time
	running map[types.UID][]string // a claim's sandboxes that still run
	direct  []Finding              // sandboxes opened without a claim
	claims  []Finding
}

func newSessions(t model.Tenant, now time.Time) *sessions {
	return &sessions{t: t, now: now, running: map[types.UID][]string{}}
}

// sandbox reads one of the tenant's sandboxes: one no claim or warm pool
// controls is judged now; one of a claim is kept, by name, for its claim.
func (s *sessions) sandbox(sb *unstructured.Unstructured) {
	ref, controlled := sessionOwner(*sb)
	switch {
	case !controlled:
		at, hasEnd, bad := shutdownTime(*sb, "spec", "shutdownTime")
		judge := sessionJudge{kind: "Sandbox", obj: *sb, tenant: s.t, now: s.now, field: "spec.shutdownTime", direct: true}
		if f, ok := judge.judge(at, hasEnd, bad, func() bool { return sandboxExpired(*sb) }, nil); ok {
			s.direct = append(s.direct, f)
		}
	case ref.Kind == "SandboxClaim" && !sandboxExpired(*sb):
		s.running[ref.UID] = append(s.running[ref.UID], sb.GetName())
	}
}

// claim judges one of the tenant's claims, after every sandbox was read.
func (s *sessions) claim(c *unstructured.Unstructured) {
	at, hasEnd, bad := shutdownTime(*c, "spec", "lifecycle", "shutdownTime")
	policy, _, _ := unstructured.NestedString(c.Object, "spec", "lifecycle", "shutdownPolicy")
	live := s.running[c.GetUID()]
	judge := sessionJudge{kind: "SandboxClaim", obj: *c, tenant: s.t, now: s.now, field: "spec.lifecycle.shutdownTime"}
	ended := func() bool {
		// Delete (and DeleteForeground) remove the claim at its end; Retain
		// keeps the claim as a record once its sandbox is gone.
		return !strings.HasPrefix(policy, "Delete") && len(live) == 0
	}
	if f, ok := judge.judge(at, hasEnd, bad, ended, live); ok {
		s.claims = append(s.claims, f)
	}
}

// forgetSandboxes and forgetClaims drop what was read of a kind, before it
// is read again from the start.
func (s *sessions) forgetSandboxes() { s.running, s.direct = map[types.UID][]string{}, nil }
func (s *sessions) forgetClaims()    { s.claims = nil }

// findings are the tenant's overdue sessions, by object.
func (s *sessions) findings() []Finding {
	var out []Finding
	out = append(out, s.claims...)
	out = append(out, s.direct...)
	sort.Slice(out, func(i, j int) bool { return out[i].Object() < out[j].Object() })
	return out
}

// sessionJudge judges one claim or direct sandbox against its end.
type sessionJudge struct {
	kind   string
	obj    unstructured.Unstructured
	tenant model.Tenant
	now    time.Time
	field  string
	direct bool
}

// judge reports the session when nothing ends it in time, or when its end
// passed and ended() says it was not ended. live names a claim's running
// sandboxes for the reason.
func (j sessionJudge) judge(at time.Time, hasEnd bool, bad string, ended func() bool, live []string) (Finding, bool) {
	maxTTL := j.tenant.Claims.MaxTTL
	created := j.obj.GetCreationTimestamp().Time
	var problems []string
	end, endSays := at, fmt.Sprintf("its %s %s", j.field, at.UTC().Format(time.RFC3339))
	switch {
	case bad != "":
		problems = append(problems, fmt.Sprintf("its %s %q is not an RFC 3339 time, so nothing ends it", j.field, bad))
		hasEnd = false
	case !hasEnd && maxTTL > 0:
		problems = append(problems, fmt.Sprintf("it has no %s, so nothing ends it (max_ttl %s)", j.field, maxTTL))
	case hasEnd && maxTTL > 0 && !created.IsZero() && at.After(created.Add(maxTTL)):
		problems = append(problems, fmt.Sprintf("its %s is %s beyond max_ttl (%s) after its creation", j.field, at.Sub(created.Add(maxTTL)).Round(time.Second), maxTTL))
	}
	// An object the API server stored always has a creation time; one
	// without (a hand-made fixture) has no max_ttl end to measure.
	bounded := maxTTL > 0 && !created.IsZero()
	if bounded && (!hasEnd || created.Add(maxTTL).Before(end)) {
		end, endSays = created.Add(maxTTL), fmt.Sprintf("max_ttl %s after its creation", maxTTL)
	}
	if (hasEnd || bounded) && j.now.Sub(end) > OverdueGrace && !ended() {
		over := fmt.Sprintf("it still exists %s past its end (%s)", j.now.Sub(end).Round(time.Second), endSays)
		if len(live) > 0 {
			over += fmt.Sprintf(" and its sandbox %s still runs", strings.Join(live, ", "))
		}
		if dt := j.obj.GetDeletionTimestamp(); dt != nil && len(j.obj.GetFinalizers()) > 0 {
			over += fmt.Sprintf("; its deletion has waited %s on finalizers %s", j.now.Sub(dt.Time).Round(time.Second), strings.Join(j.obj.GetFinalizers(), ", "))
		}
		problems = append([]string{over}, problems...)
	}
	if len(problems) == 0 {
		return Finding{}, false
	}
	reason := strings.Join(problems, "; ")
	if j.direct {
		reason = "a session opened without a claim: " + reason
	}
	resource := strings.ToLower(j.kind)
	fix := fmt.Sprintf("kubectl delete %s -n %s %s (the session ends); if sessions outlive their end, check that the Agent Sandbox controller runs (paddock status)",
		resource, j.obj.GetNamespace(), j.obj.GetName())
	if dt := j.obj.GetDeletionTimestamp(); dt != nil && len(j.obj.GetFinalizers()) > 0 {
		fix = fmt.Sprintf("find what holds finalizers %s on %s %s/%s and let it finish, or remove them with kubectl patch (the session ends)",
			strings.Join(j.obj.GetFinalizers(), ", "), resource, j.obj.GetNamespace(), j.obj.GetName())
	}
	return finding(RuleSessionOverdue, j.kind, metav1.ObjectMeta{Namespace: j.obj.GetNamespace(), Name: j.obj.GetName()}, j.tenant.Name, reason, fix), true
}

// shutdownTime reads an RFC 3339 time at path: the time and true when set,
// or the raw value in bad when it does not parse.
func shutdownTime(o unstructured.Unstructured, path ...string) (at time.Time, ok bool, bad string) {
	s, found, _ := unstructured.NestedString(o.Object, path...)
	if !found || s == "" {
		return time.Time{}, false, ""
	}
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, false, s
	}
	return at, true, ""
}

// sessionOwner is the sandbox's controlling owner when it is a claim or a
// warm pool of the Agent Sandbox extensions: the same test the
// sandbox-lifetime guardrail applies at admission.
func sessionOwner(sb unstructured.Unstructured) (metav1.OwnerReference, bool) {
	for _, ref := range sb.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller &&
			strings.HasPrefix(ref.APIVersion, agentsandbox.SandboxClaims.Group+"/") &&
			slices.Contains(manifests.SessionOwnerKinds, ref.Kind) {
			return ref, true
		}
	}
	return metav1.OwnerReference{}, false
}

// sandboxExpired is the controller's mark that it ended the sandbox at its
// shutdownTime (its pod is torn down; with shutdown policy Retain the
// Sandbox object stays).
func sandboxExpired(sb unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == string(sandboxv1beta1.SandboxConditionReady) && m["reason"] == sandboxv1beta1.SandboxReasonExpired {
			return true
		}
	}
	return false
}

// listOrNone lists one kind in a namespace; a kind the API server does not
// serve lists nothing.
func listOrNone(ctx context.Context, ns, what string, list func(context.Context) (*unstructured.UnstructuredList, error)) ([]unstructured.Unstructured, error) {
	l, err := list(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", what, ns, err)
	}
	return l.Items, nil
}
