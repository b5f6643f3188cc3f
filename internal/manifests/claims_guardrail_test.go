package manifests

import (
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/vaptest"
)

// claimAt is a SandboxClaim as the claims guardrail sees it: created at
// created, with lifecycle (nil: none).
func claimAt(created string, lifecycle map[string]any) map[string]any {
	spec := map[string]any{"warmPoolRef": map[string]any{"name": "agent"}}
	if lifecycle != nil {
		spec["lifecycle"] = lifecycle
	}
	return map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxClaim",
		"metadata":   map[string]any{"name": "session", "namespace": "agents-a", "creationTimestamp": created},
		"spec":       spec,
	}
}

// lifecycle is a claim's spec.lifecycle the TTL and shutdown rules admit,
// with shutdownTime when it is not "".
func lifecycle(shutdownTime string) map[string]any {
	l := map[string]any{"ttlSecondsAfterFinished": int64(600), "shutdownPolicy": "Delete"}
	if shutdownTime != "" {
		l["shutdownTime"] = shutdownTime
	}
	return l
}

func withTTL(l map[string]any, seconds int64) map[string]any {
	l["ttlSecondsAfterFinished"] = seconds
	return l
}

func withPolicy(l map[string]any, policy string) map[string]any {
	l["shutdownPolicy"] = policy
	return l
}

func withoutKey(l map[string]any, key string) map[string]any {
	delete(l, key)
	return l
}

// max_ttl is a session's hard maximum: a claim must carry a shutdownTime no
// later than max_ttl after its creation, on CREATE and on every UPDATE that
// changes it, and each refusal says what to set.
func TestClaimsGuardrailHoldsSessionsToMaxTTL(t *testing.T) {
	p := &model.Platform{Name: "p"}
	tn := model.DefaultTenant("a")
	tn.Claims.MaxTTL = 4 * time.Hour
	g := claimsGuardrail(p, tn)
	msg := ClaimsGuardrailMessages(tn)

	const created = "2030-01-02T10:00:00Z"
	withMeta := func(c map[string]any, annotations map[string]any) map[string]any {
		c["metadata"].(map[string]any)["annotations"] = annotations
		return c
	}
	for _, c := range []struct {
		name     string
		old, obj map[string]any
		want     string // the refusal's message; "" admits
	}{
		{"exactly max_ttl after creation", nil, claimAt(created, lifecycle("2030-01-02T14:00:00Z")), ""},
		{"within, with an offset and fractions", nil, claimAt(created, lifecycle("2030-01-02T15:59:59.999+02:00")), ""},
		{"already past (the controller ends it at once)", nil, claimAt(created, lifecycle("2030-01-01T00:00:00Z")), ""},
		{"no shutdownTime", nil, claimAt(created, lifecycle("")), msg.ShutdownTimeRequired},
		{"no lifecycle at all", nil, claimAt(created, nil), msg.TTLRequired},
		{"one second beyond", nil, claimAt(created, lifecycle("2030-01-02T14:00:01Z")), msg.ShutdownTimeMax},
		{"beyond, by way of an offset", nil, claimAt(created, lifecycle("2030-01-02T14:30:00-00:15")), msg.ShutdownTimeMax},
		{"30 days out", nil, claimAt(created, lifecycle("2030-02-01T10:00:00Z")), msg.ShutdownTimeMax},
		{"lower-case t and z (the CRD's date-time lets them through)", nil, claimAt(created, lifecycle("2030-01-02t12:00:00z")), msg.ShutdownTimeFormat},
		{"not a time", nil, claimAt(created, lifecycle("in two hours")), msg.ShutdownTimeFormat},
		{"no offset", nil, claimAt(created, lifecycle("2030-01-02T12:00:00")), msg.ShutdownTimeFormat},

		{"update pushes shutdownTime out beyond max_ttl",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, lifecycle("2030-01-02T18:00:00Z")), msg.ShutdownTimeMax},
		{"update moves shutdownTime later, still within",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, lifecycle("2030-01-02T13:00:00Z")), ""},
		{"update brings shutdownTime forward",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, lifecycle("2030-01-02T11:00:00Z")), ""},
		{"update removes shutdownTime",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, lifecycle("")), msg.ShutdownTimeRequired},
		{"update of a claim made before the rule, shutdownTime untouched (the controller's annotation)",
			claimAt(created, lifecycle("")), withMeta(claimAt(created, lifecycle("")), map[string]any{"agents.x-k8s.io/sandbox-name": "sb"}), ""},
		{"update of a claim made under a longer max_ttl, shutdownTime untouched",
			claimAt(created, lifecycle("2030-01-02T18:00:00Z")), withMeta(claimAt(created, lifecycle("2030-01-02T18:00:00Z")), map[string]any{"x": "y"}), ""},
		{"update of a claim made under a longer max_ttl, shutdownTime moved later",
			claimAt(created, lifecycle("2030-01-02T18:00:00Z")), claimAt(created, lifecycle("2030-01-02T19:00:00Z")), msg.ShutdownTimeMax},
		{"update of a claim made before the rule, shutdownTime added beyond",
			claimAt(created, lifecycle("")), claimAt(created, lifecycle("2030-01-03T10:00:00Z")), msg.ShutdownTimeMax},
		{"update of a claim made under a longer max_ttl moves shutdownTime earlier, still beyond today's",
			claimAt(created, lifecycle("2030-01-02T20:00:00Z")), claimAt(created, lifecycle("2030-01-02T19:00:00Z")), ""},
		{"update of a claim made under a longer max_ttl, its longer TTL untouched (a finalizer removed)",
			claimAt(created, withTTL(lifecycle("2030-01-02T20:00:00Z"), 7*3600)),
			withMeta(claimAt(created, withTTL(lifecycle("2030-01-02T20:00:00Z"), 7*3600)), map[string]any{"x": "y"}), ""},
		{"update raises the TTL beyond max_ttl",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, withTTL(lifecycle("2030-01-02T12:00:00Z"), 7*3600)), msg.TTLCapped},
		{"update removes the TTL",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, withoutKey(lifecycle("2030-01-02T12:00:00Z"), "ttlSecondsAfterFinished")), msg.TTLRequired},
		{"update of a claim made before the rule with shutdown policy Retain, policy untouched",
			claimAt(created, withPolicy(lifecycle(""), "Retain")), withMeta(claimAt(created, withPolicy(lifecycle(""), "Retain")), map[string]any{"x": "y"}), ""},
		{"update sets shutdown policy Retain",
			claimAt(created, lifecycle("2030-01-02T12:00:00Z")), claimAt(created, withPolicy(lifecycle("2030-01-02T12:00:00Z"), "Retain")), msg.ShutdownDelete},
		{"update of a claim made before the rule, without lifecycle, untouched",
			claimAt(created, nil), withMeta(claimAt(created, nil), map[string]any{"x": "y"}), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := vaptest.Admit(g.Policy, c.obj, c.old)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "" && r != nil:
				t.Errorf("refused: %s", r.Message)
			case c.want != "" && r == nil:
				t.Errorf("admitted, want refused with %q", c.want)
			case c.want != "" && r.Message != c.want:
				t.Errorf("refused with %q, want %q", r.Message, c.want)
			}
		})
	}

	// A date the pattern lets by that is no date (the CRD's date-time format
	// refuses it first) ends the expression in an error, which refuses it too.
	if r, err := vaptest.Admit(g.Policy, claimAt(created, lifecycle("2030-02-30T10:00:00Z")), nil); err != nil || r == nil {
		t.Errorf("February 30th: %+v (%v), want refused", r, err)
	}

	// The messages tell the orchestrator's author what to set, field by field.
	for _, m := range []string{msg.ShutdownTimeRequired, msg.ShutdownTimeMax} {
		for _, want := range []string{"tenant a", "spec.lifecycle.shutdownTime", "14400 seconds", "max_ttl 4h0m0s", "metadata.creationTimestamp"} {
			if !strings.Contains(m, want) {
				t.Errorf("message %q lacks %q", m, want)
			}
		}
	}
	if !strings.Contains(msg.ShutdownTimeFormat, "spec.lifecycle.shutdownTime in RFC 3339") || !strings.Contains(msg.ShutdownTimeRequired, "RFC 3339") {
		t.Errorf("the messages do not name the format: %q, %q", msg.ShutdownTimeFormat, msg.ShutdownTimeRequired)
	}
	// Each validation carries the message verify tells it by.
	var got []string
	for _, v := range g.Policy.Spec.Validations {
		got = append(got, v.Message)
	}
	want := []string{msg.TTLRequired, msg.ShutdownDelete, msg.TTLCapped, msg.ShutdownTimeRequired, msg.ShutdownTimeFormat, msg.ShutdownTimeMax}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("validation messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With max_ttl = "none" (a waiver of PDK-406) there is no maximum and no
// shutdownTime is required; the TTL and shutdown rules still hold.
func TestClaimsGuardrailWithoutMaxTTL(t *testing.T) {
	p := &model.Platform{Name: "p"}
	tn := model.DefaultTenant("a")
	tn.Claims.MaxTTL = 0
	g := claimsGuardrail(p, tn)
	const created = "2030-01-02T10:00:00Z"
	for _, l := range []map[string]any{lifecycle(""), lifecycle("2031-01-02T10:00:00Z")} {
		if r, err := vaptest.Admit(g.Policy, claimAt(created, l), nil); err != nil || r != nil {
			t.Errorf("lifecycle %v: refused %+v (%v)", l, r, err)
		}
	}
	if r, err := vaptest.Admit(g.Policy, claimAt(created, nil), nil); err != nil || r == nil || r.Message != ClaimsGuardrailMessages(tn).TTLRequired {
		t.Errorf("a claim without lifecycle: %+v (%v), want the TTL rule's refusal", r, err)
	}
	if len(g.Policy.Spec.Validations) != 2 {
		t.Errorf("validations %+v: want the TTL and shutdown rules only", g.Policy.Spec.Validations)
	}
	if _, ok := sandboxLifetimeGuardrail(p, tn); ok {
		t.Error("a sandbox-lifetime guardrail without max_ttl")
	}
	if m := ClaimsGuardrailMessages(tn); m.ShutdownTimeRequired != "" || m.ShutdownTimeMax != "" || m.TTLCapped != "" {
		t.Errorf("max_ttl rules' messages without max_ttl: %+v", m)
	}
}
