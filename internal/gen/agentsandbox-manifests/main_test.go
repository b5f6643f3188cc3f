package main

import (
	"bytes"
	"os"
	"testing"
)

// Each embedded release must be exactly what its pinned module's kustomization renders.
func TestCommittedReleasesMatchPinnedModules(t *testing.T) {
	for _, r := range releases() {
		want, err := render(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(outputPath(r.version))
		if err != nil {
			t.Fatalf("%v: run `go run ./internal/gen/agentsandbox-manifests`", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from a fresh render of %s: run `go run ./internal/gen/agentsandbox-manifests` and review the diff", outputPath(r.version), r.pin)
		}
	}
}
