package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStackMode(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "examples"))

	f := &specFlags{stack: "team-a"}
	dir, file, err := f.stackMode()
	if err != nil || dir != root || file != filepath.Join(root, "stacks", "Pulumi.team-a.yaml") {
		t.Fatalf("--stack team-a: %q %q %v", dir, file, err)
	}
	// A stack without a file is the stack of SPEC, as before.
	f = &specFlags{stack: "local-demo"}
	if dir, _, err := f.stackMode(); err != nil || dir != "" {
		t.Fatalf("--stack local-demo: %q %v", dir, err)
	}
	// ... unless the project was named: then the file must be there.
	f = &specFlags{stack: "local-demo", projectDir: root}
	if _, _, err := f.stackMode(); err == nil {
		t.Fatal("--project-dir with a stack that has no file was accepted")
	}
	f = &specFlags{projectDir: root}
	if _, _, err := f.stackMode(); err == nil || !strings.Contains(err.Error(), "--project-dir needs --stack") {
		t.Fatalf("--project-dir alone: %v", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "x"), nil, 0o644)
	f = &specFlags{stack: "team-a", projectDir: other}
	if _, _, err := f.stackMode(); err == nil {
		t.Fatal("--project-dir without a Pulumi.yaml accepted")
	}

	// One source of truth: a stack file's variables are not overridden from the command line.
	f = &specFlags{stack: "team-a", vars: []string{"image=x"}}
	var out bytes.Buffer
	if _, err := f.load(context.Background(), nil, &out, &out, false, false); err == nil || !strings.Contains(err.Error(), "takes its variables from") {
		t.Fatalf("--var with a stack file: %v", err)
	}
}
