package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/drift"
)

func TestDriftExitStrictFailsAPartialComparison(t *testing.T) {
	partial := &drift.Report{Partial: "a dead run record stands in the way"}
	drifted := &drift.Report{Resources: []drift.Resource{{Kind: "NetworkPolicy", Name: "agents-team-a/default-deny"}}}
	for _, tc := range []struct {
		name   string
		rep    *drift.Report
		strict bool
		code   int // 0: nil error
	}{
		{"clean", &drift.Report{}, true, 0},
		{"partial, not strict: the engine said so, exit as the report reads", partial, false, 0},
		{"partial, strict", partial, true, 1},
		{"drifted", drifted, false, 2},
		{"drifted and partial, strict", &drift.Report{Resources: drifted.Resources, Partial: "x"}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := driftExit(tc.rep, tc.strict)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != tc.code {
				t.Fatalf("err = %v, want exit %d", err, tc.code)
			}
			if tc.code == 1 && !strings.Contains(err.Error(), tc.rep.Partial) {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}
