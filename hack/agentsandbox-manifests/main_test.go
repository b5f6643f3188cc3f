package main

import (
	"bytes"
	"os"
	"testing"
)

// The embedded release must be exactly what the pinned module's kustomization renders.
func TestCommittedReleaseMatchesPinnedModule(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(outputPath())
	if err != nil {
		t.Fatalf("%v: run `go run ./hack/agentsandbox-manifests`", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from a fresh render of the pinned module: run `go run ./hack/agentsandbox-manifests` and review the diff", outputPath())
	}
}
