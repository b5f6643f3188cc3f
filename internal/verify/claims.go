// The claim-lifecycle check (V08): the claims guardrail proven with
// server-side dry-runs, and live claims held to max_ttl.

package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
		if len(t.WarmPools) == 0 {
			continue
		}
		g, ok := claimsGuardrail(v.p, t)
		if !ok {
			out = append(out, fail(t.Namespace, "the spec builds no claims guardrail for this tenant"))
			continue
		}
		claims := v.dyn.Resource(claimsGVR).Namespace(t.Namespace)
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		now := time.Now()
		if _, err := claims.Create(ctx, probeClaim(t, "paddock-verify-valid", now), dry); err != nil {
			out = append(out, fail(t.Namespace, "a valid claim (TTL, shutdown Delete and a shutdownTime within max_ttl) is refused too, so the lifecycle rules cannot be told apart: %s", shortErr(err)))
			continue
		}
		var problems, refused []string
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
		// Admission holds new claims only: a claim made before the guardrail, or
		// while someone had it switched off, runs on unbounded.
		if unbounded, err := claimsBeyondMaxTTL(ctx, v, t); err != nil {
			problems = append(problems, fmt.Sprintf("listing the live claims to check their shutdownTime: %s", shortErr(err)))
		} else if len(unbounded) > 0 {
			problems = append(problems, fmt.Sprintf("%d live claim(s) outlive max_ttl (%s), admitted before the guardrail held: %s", len(unbounded), t.Claims.MaxTTL, strings.Join(unbounded, "; ")))
		}
		switch {
		case len(problems) > 0:
			out = append(out, fail(t.Namespace, "%s", strings.Join(problems, "; ")))
		case t.Claims.MaxTTL <= 0:
			out = append(out, pass(t.Namespace, "refused by %s: a claim %s; max_ttl is none, so no shutdownTime is required and sessions have no maximum lifetime", g.Policy.Name, strings.Join(refused, ", ")))
		default:
			out = append(out, pass(t.Namespace, "refused by %s, each by its own rule: a claim %s; admitted with a shutdownTime within max_ttl", g.Policy.Name, strings.Join(refused, ", a claim ")))
		}
	}
	return out
}

// claimsBeyondMaxTTL lists the tenant's live claims without a shutdownTime, or
// with one later than max_ttl after their creation ("name: why"), sorted by
// name. With max_ttl none there is no maximum to outlive.
func claimsBeyondMaxTTL(ctx context.Context, v *Verifier, t model.Tenant) ([]string, error) {
	if t.Claims.MaxTTL <= 0 {
		return nil, nil
	}
	list, err := v.dyn.Resource(claimsGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		if c.GetDeletionTimestamp() != nil {
			continue
		}
		st, ok, _ := unstructured.NestedString(c.Object, "spec", "lifecycle", "shutdownTime")
		if !ok || st == "" {
			out = append(out, c.GetName()+": no spec.lifecycle.shutdownTime")
			continue
		}
		at, err := time.Parse(time.RFC3339, st)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: shutdownTime %q is not RFC 3339", c.GetName(), st))
			continue
		}
		if limit := c.GetCreationTimestamp().Add(t.Claims.MaxTTL); at.After(limit) {
			out = append(out, fmt.Sprintf("%s: shutdownTime %s is %s past max_ttl", c.GetName(), st, at.Sub(limit).Round(time.Second)))
		}
	}
	sort.Strings(out)
	return out, nil
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
