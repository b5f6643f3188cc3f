// The claim-lifecycle check (V08): the claims and sandbox-lifetime
// guardrails proven with server-side dry-runs, and every live session held
// to its end by the same judge as drift's S08.

package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// claimsGuardrail is the admission policy that holds a tenant's claims to
// their lifecycle: a TTL, shutdown Delete and a shutdownTime within max_ttl.
func claimsGuardrail(p *model.Platform, t model.Tenant) (manifests.Guardrail, bool) {
	name := manifests.GuardrailName(p, t, "claims")
	for _, g := range manifests.Guardrails(p, t) {
		if g.Policy.Name == name {
			return g, true
		}
	}
	return manifests.Guardrail{}, false
}

// probeClaim is a claim the tenant's guardrail admits: the first warm pool,
// the tenant's TTL (capped by its maximum), shutdown Delete and, unless
// max_ttl is none, a shutdownTime half of max_ttl after now. The API server
// measures from its own clock; the other half is room for this machine's
// running ahead of it.
func probeClaim(t model.Tenant, name string, now time.Time) *unstructured.Unstructured {
	ttl := int64(t.Claims.TTL.Seconds())
	if ttl <= 0 {
		ttl = 600
	}
	if max := int64(t.Claims.MaxTTL.Seconds()); max > 0 && ttl > max {
		ttl = max
	}
	lifecycle := map[string]any{"ttlSecondsAfterFinished": ttl, "shutdownPolicy": "Delete"}
	if t.Claims.MaxTTL > 0 {
		lifecycle["shutdownTime"] = now.Add(t.Claims.MaxTTL / 2).UTC().Format(time.RFC3339)
	}
	// A tenant without a warm pool gets a claim of a pool it does not have
	// (V13 asks only that the request be audited).
	pool := "paddock-verify-no-warm-pool"
	if len(t.WarmPools) > 0 {
		pool = t.WarmPools[0].Name
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimsGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   map[string]any{"name": name, "namespace": t.Namespace},
		"spec": map[string]any{
			"warmPoolRef": map[string]any{"name": pool},
			"lifecycle":   lifecycle,
		},
	}}
}

// beyondMaxTTLMargin is how far past max_ttl the probe that must be refused
// sets its shutdownTime: room for this machine's clock running behind the
// API server's.
const beyondMaxTTLMargin = time.Hour

// claimProbe is a claim that breaks one rule of the claims guardrail: the
// valid probe with its lifecycle changed.
type claimProbe struct {
	name   string
	what   string // how it breaks the rule, as the report says it
	want   string // the message of the rule that must refuse it
	change func(lifecycle map[string]any)
}

// claimProbes break, one rule each, the rules of the tenant's guardrail
// that bound a session: the TTL after it finishes and, unless max_ttl is
// none, its shutdownTime.
func claimProbes(t model.Tenant, now time.Time) []claimProbe {
	msg := manifests.ClaimsGuardrailMessages(t)
	probes := []claimProbe{{
		name: "paddock-verify-no-ttl", what: "without lifecycle TTL (spec.lifecycle.ttlSecondsAfterFinished)", want: msg.TTLRequired,
		change: func(l map[string]any) { delete(l, "ttlSecondsAfterFinished") },
	}}
	if t.Claims.MaxTTL <= 0 {
		return probes
	}
	beyond := now.Add(t.Claims.MaxTTL + beyondMaxTTLMargin).UTC().Format(time.RFC3339)
	return append(probes,
		claimProbe{
			name: "paddock-verify-no-shutdown-time", what: "without spec.lifecycle.shutdownTime", want: msg.ShutdownTimeRequired,
			change: func(l map[string]any) { delete(l, "shutdownTime") },
		},
		claimProbe{
			name: "paddock-verify-beyond-max-ttl", what: fmt.Sprintf("with spec.lifecycle.shutdownTime %s past max_ttl (%s)", beyondMaxTTLMargin, t.Claims.MaxTTL),
			want:   msg.ShutdownTimeMax,
			change: func(l map[string]any) { l["shutdownTime"] = beyond },
		},
	)
}

// checkClaimLifecycleEnforced dry-runs a claim the guardrail admits and, for
// each rule that bounds a session, the same claim breaking that rule only
// (no TTL; no shutdownTime; a shutdownTime beyond max_ttl). The first must
// be accepted, and each other refused by the tenant's claims policy with
// that rule's message: a refusal from anywhere else (RBAC, another policy,
// the schema), by another rule, or a policy that refuses every claim proves
// nothing about the rule.
func checkClaimLifecycleEnforced(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		var problems, proven []string
		if len(t.WarmPools) > 0 {
			type answer struct {
				problems []string
				proven   string
			}
			a := untilAdmissionSettles(ctx, v, func() (answer, bool) {
				p, ok := claimRulesRefused(ctx, v, t)
				return answer{p, ok}, len(p) == 0
			})
			problems = append(problems, a.problems...)
			if a.proven != "" {
				proven = append(proven, a.proven)
			}
		}
		type answer struct{ problem, proven string }
		if a := untilAdmissionSettles(ctx, v, func() (answer, bool) {
			p, ok := directSandboxRefused(ctx, v, t)
			return answer{p, ok}, p == ""
		}); a.problem != "" {
			problems = append(problems, a.problem)
		} else if a.proven != "" {
			proven = append(proven, a.proven)
		}
		// Admission holds a session's end only when it is written: a claim
		// made before the guardrail, under a longer max_ttl, or that the
		// controller did not end runs on.
		overdue, err := drift.Lifetimes(ctx, t, v.dyn, time.Now())
		if err != nil {
			problems = append(problems, fmt.Sprintf("reading the live claims and sandboxes to hold them to their end: %s", shortErr(err)))
		}
		for _, f := range overdue {
			problems = append(problems, fmt.Sprintf("%s %s: %s", f.Kind, f.Name, f.Reason))
		}
		switch {
		case len(problems) > 0:
			out = append(out, fail(t.Namespace, "%s", strings.Join(problems, "; ")))
		case len(proven) > 0:
			out = append(out, pass(t.Namespace, "%s; no live claim or sandbox outlives its end", strings.Join(proven, "; ")))
		}
	}
	return out
}

// claimRulesRefused dry-runs the valid probe claim and each probe that
// breaks one lifecycle rule; it returns what went wrong, or what it proved.
func claimRulesRefused(ctx context.Context, v *Verifier, t model.Tenant) (problems []string, proven string) {
	g, ok := claimsGuardrail(v.p, t)
	if !ok {
		return []string{"the spec builds no claims guardrail for this tenant"}, ""
	}
	claims := v.dyn.Resource(claimsGVR).Namespace(t.Namespace)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	now := time.Now()
	if _, err := claims.Create(ctx, probeClaim(t, "paddock-verify-valid", now), dry); err != nil {
		return []string{fmt.Sprintf("a valid claim (TTL, shutdown Delete and a shutdownTime within max_ttl) is refused too, so the lifecycle rules cannot be told apart: %s", shortErr(err))}, ""
	}
	var refused []string
	for _, probe := range claimProbes(t, now) {
		claim := probeClaim(t, probe.name, now)
		lifecycle, _, _ := unstructured.NestedMap(claim.Object, "spec", "lifecycle")
		probe.change(lifecycle)
		if err := unstructured.SetNestedMap(claim.Object, lifecycle, "spec", "lifecycle"); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		_, err := claims.Create(ctx, claim, dry)
		msg, byPolicy := deniedByPolicy(err, g)
		switch {
		case err == nil:
			problems = append(problems, fmt.Sprintf("a claim %s was accepted", probe.what))
		case !byPolicy:
			problems = append(problems, fmt.Sprintf("a claim %s was refused, but not by the claims guardrail %s: %s", probe.what, g.Policy.Name, shortErr(err)))
		case msg != probe.want:
			problems = append(problems, fmt.Sprintf("a claim %s was refused by another rule of %s (%q), so its own is unproven", probe.what, g.Policy.Name, msg))
		default:
			refused = append(refused, probe.what)
		}
	}
	if len(problems) > 0 {
		return problems, ""
	}
	if t.Claims.MaxTTL <= 0 {
		return nil, fmt.Sprintf("refused by %s: a claim %s; max_ttl is none, so no shutdownTime is required and sessions have no maximum lifetime", g.Policy.Name, strings.Join(refused, ", "))
	}
	return nil, fmt.Sprintf("refused by %s, each by its own rule: a claim %s; admitted with a shutdownTime within max_ttl", g.Policy.Name, strings.Join(refused, ", a claim "))
}

// directSandboxRefused dry-runs a Sandbox created directly in the tenant's
// namespace with no shutdownTime: with max_ttl, the tenant's
// sandbox-lifetime guardrail must refuse it with its own message, so a
// session opened without a claim is held to the same maximum.
func directSandboxRefused(ctx context.Context, v *Verifier, t model.Tenant) (problem, proven string) {
	var g manifests.Guardrail
	name := manifests.GuardrailName(v.p, t, "sandbox-lifetime")
	for _, c := range manifests.Guardrails(v.p, t) {
		if c.Policy.Name == name {
			g = c
		}
	}
	if g.Policy == nil {
		return "", ""
	}
	runtimeClass := ""
	for _, tpl := range t.Templates {
		if tpl.RuntimeClass != "" {
			runtimeClass = tpl.RuntimeClass
			break
		}
	}
	podSpec := map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "registry.invalid/paddock-verify:probe"}}}
	if runtimeClass != "" {
		podSpec["runtimeClassName"] = runtimeClass
	}
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxesGVR.GroupVersion().String(),
		"kind":       "Sandbox",
		"metadata":   map[string]any{"name": "paddock-verify-direct-sandbox", "namespace": t.Namespace},
		"spec":       map[string]any{"podTemplate": map[string]any{"spec": podSpec}},
	}}
	_, err := v.dyn.Resource(sandboxesGVR).Namespace(t.Namespace).Create(ctx, sb, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	msg, byPolicy := deniedByPolicy(err, g)
	switch {
	case err == nil:
		return "a Sandbox created directly, with no claim and no shutdownTime, was accepted: nothing ends that session", ""
	case !byPolicy || msg != manifests.SandboxLifetimeMessage(t):
		return fmt.Sprintf("a Sandbox created directly with no shutdownTime was refused, but not by %s's rule: %s", g.Policy.Name, shortErr(err)), ""
	}
	return "", fmt.Sprintf("refused by %s: a Sandbox created directly with no shutdownTime", g.Policy.Name)
}

// deniedByPolicy reports whether err is the API server refusing a request
// because guardrail g's policy, through its binding, denied it with one of
// the validation messages the spec gives it; it returns that message.
func deniedByPolicy(err error, g manifests.Guardrail) (string, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", false
	}
	s := st.Status()
	if s.Reason != metav1.StatusReasonInvalid && s.Reason != metav1.StatusReasonForbidden {
		return "", false
	}
	prefix := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", g.Policy.Name, g.Binding.Name)
	var said []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			said = append(said, c.Message)
		}
	}
	said = append(said, s.Message)
	for _, m := range said {
		i := strings.Index(m, prefix)
		if i < 0 {
			continue
		}
		msg := m[i+len(prefix):]
		for _, val := range g.Policy.Spec.Validations {
			if msg == val.Message {
				return msg, true
			}
		}
	}
	return "", false
}
