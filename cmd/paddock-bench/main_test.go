package main

import (
	"slices"
	"testing"
)

// -fleet, like -tenants and -validate-lines: positive counts, sorted; empty
// is none (the fleet benchmark is skipped).
func TestIntList(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "1,3,10": {1, 3, 10}, "10, 1,3": {1, 3, 10}, "3,": {3}} {
		got, err := intList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("intList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "x", "1,two"} {
		if got, err := intList(in); err == nil {
			t.Errorf("intList(%q) = %v, want an error", in, got)
		}
	}
}
