package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/drift"
)

func TestStackWholeFailsOnEveryDriftedObject(t *testing.T) {
	run := func(rep *drift.Report, err error, set bool) []Result {
		v := &Verifier{}
		if set {
			v.opts.StackDrift = func(context.Context) (*drift.Report, error) { return rep, err }
		}
		return checkStackWhole(context.Background(), v)
	}
	if got := run(nil, nil, false); len(got) != 1 || got[0].Status != NotVerifiable {
		t.Errorf("no stack: %+v, want not verifiable", got)
	}
	if got := run(nil, errors.New("stack \"x\" does not exist"), true); len(got) != 1 || got[0].Status != NotVerifiable || !strings.Contains(got[0].Reason, "does not exist") {
		t.Errorf("comparison failed: %+v", got)
	}
	if got := run(&drift.Report{Stack: "local-demo", Checked: 48}, nil, true); len(got) != 1 || got[0].Status != Pass || !strings.Contains(got[0].Reason, "48 objects") {
		t.Errorf("clean: %+v", got)
	}
	guardrail := drift.Resource{Kind: "ValidatingAdmissionPolicy", Name: "paddock-local-demo-team-a-claims", Change: drift.Modified,
		Fields: []drift.Field{{Path: "spec.matchConditions", Declared: nil, Live: []any{map[string]any{"name": "off", "expression": "false"}}}}}
	got := run(&drift.Report{Stack: "local-demo", Resources: []drift.Resource{guardrail}, Partial: ""}, nil, true)
	if len(got) != 1 || got[0].Status != Fail || got[0].Subject != "ValidatingAdmissionPolicy paddock-local-demo-team-a-claims" || !strings.Contains(got[0].Reason, "spec.matchConditions") {
		t.Errorf("a neutered guardrail: %+v", got)
	}
	got = run(&drift.Report{Stack: "local-demo", Partial: "a dead run record stands in the way"}, nil, true)
	if len(got) != 1 || got[0].Status != NotVerifiable || !strings.Contains(got[0].Reason, "dead run record") {
		t.Errorf("partial: %+v, want not verifiable (a failure under --strict)", got)
	}
}
