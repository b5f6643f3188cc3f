package verify

import (
	"testing"

	"github.com/paddock-platform/paddock/internal/policy"
)

// Every live policy rule names the verify checks that prove it, and each
// named check exists.
func TestLiveRulesNameExistingChecks(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range checks {
		ids[c.id] = true
	}
	live := 0
	for _, r := range policy.Rules() {
		if r.Kind != policy.Live {
			if len(r.Verify) > 0 {
				t.Errorf("%s is not a live rule but names verify checks %v", r.ID, r.Verify)
			}
			continue
		}
		live++
		if len(r.Verify) == 0 {
			t.Errorf("live rule %s names no verify check", r.ID)
		}
		for _, id := range r.Verify {
			if !ids[id] {
				t.Errorf("live rule %s names verify check %s, which does not exist", r.ID, id)
			}
		}
	}
	if live == 0 {
		t.Error("no live rule")
	}
}
