package main

import (
	"bytes"
	"os"
	"testing"
)

// The embedded CRDs must be exactly the pinned module's.
func TestCommittedCRDsMatchPinnedModule(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(outputPath())
	if err != nil {
		t.Fatalf("%v: run `go run ./internal/gen/cilium-crds`", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the pinned module: run `go run ./internal/gen/cilium-crds` and review the diff", outputPath())
	}
}
