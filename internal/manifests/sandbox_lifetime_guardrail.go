package manifests

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// SandboxLifetimeMessage is the message the sandbox-lifetime guardrail of
// tenant t refuses a Sandbox with ("" when max_ttl is none: no guardrail).
func SandboxLifetimeMessage(t model.Tenant) string {
	maxTTL := int64(t.Claims.MaxTTL.Seconds())
	if maxTTL <= 0 {
		return ""
	}
	return fmt.Sprintf("a Sandbox in tenant %s that no SandboxClaim or SandboxWarmPool controls must set spec.shutdownTime, "+
		"an RFC 3339 time such as %s, at most %d seconds (max_ttl %s) after its metadata.creationTimestamp: "+
		"a session opened without a claim is held to the claims' maximum; open sessions with a SandboxClaim instead",
		t.Name, exampleRFC3339, maxTTL, t.Claims.MaxTTL)
}

// SessionOwnerKinds are the kinds whose controlling owner reference bounds a
// Sandbox's life without a shutdownTime of its own: a claim ends it (the
// garbage collector deletes it with the claim), a warm pool holds it idle
// until a claim adopts it. An owner reference naming an object that does
// not exist is collected at once, so spelling one out buys nothing.
var SessionOwnerKinds = []string{"SandboxClaim", "SandboxWarmPool"}

// sandboxLifetimeGuardrail holds a Sandbox created directly in a tenant
// namespace (no claim, no warm pool) to the claims' maximum: a shutdownTime
// no later than max_ttl after its creation. Like the claims guardrail, an
// UPDATE is judged only when it changes shutdownTime or the controlling
// owner, and moving shutdownTime earlier is never refused, so the
// controller's own updates and a finalizer's removal always pass.
func sandboxLifetimeGuardrail(p *model.Platform, t model.Tenant) (Guardrail, bool) {
	maxTTL := int64(t.Claims.MaxTTL.Seconds())
	if maxTTL <= 0 {
		return Guardrail{}, false
	}
	owned := func(obj string) string {
		return fmt.Sprintf("has(%[1]s.metadata.ownerReferences) && %[1]s.metadata.ownerReferences.exists(r, "+
			"has(r.controller) && r.controller && r.apiVersion.startsWith('%[2]s/') && r.kind in %[3]s)",
			obj, agentsandbox.SandboxClaims.Group, celList(SessionOwnerKinds))
	}
	vars := []admissionv1.Variable{
		{Name: "owned", Expression: owned("object")},
		{Name: "ownerChanged", Expression: fmt.Sprintf("oldObject == null || variables.owned != (%s)", owned("oldObject"))},
		{Name: "shutdownTime", Expression: "has(object.spec.shutdownTime) ? string(object.spec.shutdownTime) : ''"},
		{Name: "previousShutdownTime", Expression: "oldObject != null && has(oldObject.spec.shutdownTime) ? string(oldObject.spec.shutdownTime) : ''"},
		{Name: "shutdownTimeChanged", Expression: "oldObject == null || variables.shutdownTime != variables.previousShutdownTime"},
	}
	within := fmt.Sprintf("(variables.shutdownTime.matches('%s') && "+
		"timestamp(variables.shutdownTime) <= timestamp(string(object.metadata.creationTimestamp)) + duration('%ds'))", rfc3339Pattern, maxTTL)
	check := fmt.Sprintf("variables.owned || (!variables.ownerChanged && !variables.shutdownTimeChanged) || %s || (!variables.ownerChanged && %s)",
		within, earlierThanBefore())
	g := guardrail(p, t, "sandbox-lifetime", []admissionv1.NamedRuleWithOperations{
		rule(agentsandbox.Sandboxes.Group, "*", agentsandbox.Sandboxes.Resource),
	}, []admissionv1.Validation{{Expression: check, Message: SandboxLifetimeMessage(t)}})
	g.Policy.Spec.Variables = vars
	return g, true
}
