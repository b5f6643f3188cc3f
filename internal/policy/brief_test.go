package policy_test

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
)

// A brief report is one line naming only what exists; an error makes it the
// whole report again.
func TestWriteTextBrief(t *testing.T) {
	note := policy.Finding{RuleID: "PDK-402", Title: "Agent Sandbox image not pinned by digest", Severity: policy.Note, Object: "agent_sandbox"}
	warning := policy.Finding{RuleID: "PDK-003", Title: "Waiver silences nothing", Severity: policy.Warning, Object: "waiver[0]"}
	waiver := policy.WaiverStatus{Waiver: model.Waiver{Rule: "PDK-603", Reason: "throwaway"}, State: policy.WaiverActive, Silenced: 1}
	const details = " — `paddock validate examples/local` for details\n"
	tests := []struct {
		name string
		r    policy.Report
		want string
	}{
		{"nothing", policy.Report{}, "policy: 0 errors, no warnings, notes or waivers.\n"},
		{"a note and a waiver", policy.Report{Findings: []policy.Finding{note}, Waivers: []policy.WaiverStatus{waiver}},
			"policy: 0 errors, 1 note, 1 waiver" + details},
		{"warnings", policy.Report{Findings: []policy.Finding{warning, warning, note, note}, Waivers: []policy.WaiverStatus{waiver, waiver}},
			"policy: 0 errors, 2 warnings, 2 notes, 2 waivers" + details},
		{"a waiver only", policy.Report{Waivers: []policy.WaiverStatus{waiver}}, "policy: 0 errors, 1 waiver" + details},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := tt.r.WriteText(&b, policy.TextOptions{Brief: true, Details: "paddock validate examples/local"}); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, b.String(), tt.want)
		}
	}

	// Errors are written in full, brief or not.
	r := policy.Check(mustLoad(t, insecureDir), testNow)
	var full, brief strings.Builder
	if err := r.WriteText(&full, policy.TextOptions{NoSnippets: true}); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&brief, policy.TextOptions{NoSnippets: true, Brief: true, Details: "paddock validate"}); err != nil {
		t.Fatal(err)
	}
	if !r.Blocking() || brief.String() != full.String() {
		t.Errorf("a blocking report written brief differs from the full one:\n%s", brief.String())
	}
}
