package manifests

import (
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// ClaimMessages are the messages of a tenant's claims guardrail, one per
// validation, so that verify can tell which rule refused a probe claim. The
// max_ttl rules (TTLCapped and the ShutdownTime ones) are empty when the
// tenant's max_ttl is none.
type ClaimMessages struct {
	TTLRequired          string
	ShutdownDelete       string
	TTLCapped            string
	ShutdownTimeRequired string
	ShutdownTimeFormat   string
	ShutdownTimeMax      string
}

// ClaimsGuardrailMessages are the messages the claims guardrail of tenant t
// refuses a claim with.
func ClaimsGuardrailMessages(t model.Tenant) ClaimMessages {
	m := ClaimMessages{
		TTLRequired:    fmt.Sprintf("claims in tenant %s must set spec.lifecycle.ttlSecondsAfterFinished (sessions expire by default)", t.Name),
		ShutdownDelete: fmt.Sprintf("claims in tenant %s must set spec.lifecycle.shutdownPolicy: Delete (a claimed sandbox is never kept or reused)", t.Name),
	}
	maxTTL := int64(t.Claims.MaxTTL.Seconds())
	if maxTTL <= 0 {
		return m
	}
	m.TTLCapped = fmt.Sprintf("claims in tenant %s may set spec.lifecycle.ttlSecondsAfterFinished to at most %d", t.Name, maxTTL)
	m.ShutdownTimeRequired = fmt.Sprintf("claims in tenant %s must set spec.lifecycle.shutdownTime, an RFC 3339 time such as %s, "+
		"at most %d seconds (max_ttl %s) after the claim's metadata.creationTimestamp: without it the session never ends",
		t.Name, exampleRFC3339, maxTTL, t.Claims.MaxTTL)
	m.ShutdownTimeFormat = fmt.Sprintf("claims in tenant %s must write spec.lifecycle.shutdownTime in RFC 3339 "+
		"(date, upper-case T, time to the second, Z or an offset +hh:mm or -hh:mm), such as %s", t.Name, exampleRFC3339)
	m.ShutdownTimeMax = fmt.Sprintf("claims in tenant %s may set spec.lifecycle.shutdownTime at most %d seconds (max_ttl %s) "+
		"after the claim's metadata.creationTimestamp: no session lives longer, and an update may not move it later",
		t.Name, maxTTL, t.Claims.MaxTTL)
	return m
}

const exampleRFC3339 = "2030-01-02T15:04:05Z"

// rfc3339Pattern is the shape of time CEL's timestamp() parses. The CRD's
// date-time format admits a few more (a lower-case t or z), on which
// timestamp() would fail with an error instead of the rule's message.
const rfc3339Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`

// The claims guardrail's variables. The API server has no clock a policy can
// read, so the maximum is measured from metadata.creationTimestamp, which it
// sets before validating admission on CREATE and keeps unchanged after.
// string() because the type checker reads the CRD's date-time field as a
// timestamp, while the value a policy gets is the JSON string.
//
// Each rule judges its own field, and only on CREATE or when an UPDATE
// changes that field: the value was judged when it was set, and a claim
// made before the rule (or under a longer max_ttl, before it was lowered)
// must still take the controller's metadata patches and a finalizer's
// removal, or its deletion would hang. Such a claim is not forgotten:
// verify's V08 and drift's S08 report it for what it is.
var claimVariables = []admissionv1.Variable{
	{
		Name:       "ttl",
		Expression: "has(object.spec.lifecycle) && has(object.spec.lifecycle.ttlSecondsAfterFinished) ? string(object.spec.lifecycle.ttlSecondsAfterFinished) : ''",
	},
	{
		Name:       "ttlChanged",
		Expression: "oldObject == null || variables.ttl != (has(oldObject.spec.lifecycle) && has(oldObject.spec.lifecycle.ttlSecondsAfterFinished) ? string(oldObject.spec.lifecycle.ttlSecondsAfterFinished) : '')",
	},
	{
		Name:       "shutdownPolicy",
		Expression: "has(object.spec.lifecycle) && has(object.spec.lifecycle.shutdownPolicy) ? object.spec.lifecycle.shutdownPolicy : ''",
	},
	{
		Name:       "shutdownPolicyChanged",
		Expression: "oldObject == null || variables.shutdownPolicy != (has(oldObject.spec.lifecycle) && has(oldObject.spec.lifecycle.shutdownPolicy) ? oldObject.spec.lifecycle.shutdownPolicy : '')",
	},
	{
		Name:       "shutdownTime",
		Expression: "has(object.spec.lifecycle) && has(object.spec.lifecycle.shutdownTime) ? string(object.spec.lifecycle.shutdownTime) : ''",
	},
	{
		Name:       "previousShutdownTime",
		Expression: "oldObject != null && has(oldObject.spec.lifecycle) && has(oldObject.spec.lifecycle.shutdownTime) ? string(oldObject.spec.lifecycle.shutdownTime) : ''",
	},
	{
		Name:       "shutdownTimeChanged",
		Expression: "oldObject == null || variables.shutdownTime != variables.previousShutdownTime",
	},
}

// earlierThanBefore holds when an UPDATE moves shutdownTime earlier than the
// value it replaces: ending a session sooner is never refused, even for a
// claim admitted under a longer max_ttl than today's.
func earlierThanBefore() string {
	return fmt.Sprintf("(variables.previousShutdownTime.matches('%[1]s') && variables.shutdownTime.matches('%[1]s') && "+
		"timestamp(variables.shutdownTime) <= timestamp(variables.previousShutdownTime))", rfc3339Pattern)
}

// claimsGuardrail holds the tenant's claims to its lifecycle: a TTL after
// they finish, shutdown policy Delete and, unless max_ttl is none, a
// shutdownTime no later than max_ttl after their creation, so that a
// session ends even when the orchestrator that opened it is gone.
func claimsGuardrail(p *model.Platform, t model.Tenant) Guardrail {
	msg := ClaimsGuardrailMessages(t)
	checks := []admissionv1.Validation{
		{
			Expression: "!variables.ttlChanged || variables.ttl != ''",
			Message:    msg.TTLRequired,
		},
		{
			Expression: "!variables.shutdownPolicyChanged || variables.shutdownPolicy == 'Delete'",
			Message:    msg.ShutdownDelete,
		},
	}
	maxTTL := int64(t.Claims.MaxTTL.Seconds())
	if maxTTL > 0 {
		checks = append(checks,
			admissionv1.Validation{
				Expression: fmt.Sprintf("!variables.ttlChanged || !has(object.spec.lifecycle) || !has(object.spec.lifecycle.ttlSecondsAfterFinished) || object.spec.lifecycle.ttlSecondsAfterFinished <= %d", maxTTL),
				Message:    msg.TTLCapped,
			},
			admissionv1.Validation{
				Expression: "!variables.shutdownTimeChanged || variables.shutdownTime != ''",
				Message:    msg.ShutdownTimeRequired,
			},
			admissionv1.Validation{
				Expression: fmt.Sprintf("!variables.shutdownTimeChanged || variables.shutdownTime == '' || variables.shutdownTime.matches('%s')", rfc3339Pattern),
				Message:    msg.ShutdownTimeFormat,
			},
			admissionv1.Validation{
				Expression: fmt.Sprintf("!variables.shutdownTimeChanged || !variables.shutdownTime.matches('%s') || "+
					"timestamp(variables.shutdownTime) <= timestamp(string(object.metadata.creationTimestamp)) + duration('%ds') || %s",
					rfc3339Pattern, maxTTL, earlierThanBefore()),
				Message: msg.ShutdownTimeMax,
			},
		)
	}
	g := guardrail(p, t, "claims", []admissionv1.NamedRuleWithOperations{
		rule(agentsandbox.SandboxClaims.Group, "*", agentsandbox.SandboxClaims.Resource),
	}, checks)
	g.Policy.Spec.Variables = slices.Clone(claimVariables)
	return g
}
