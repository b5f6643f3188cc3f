package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/paddock-platform/paddock/internal/gen/reference/refdoc"
)

// docs/reference/cli.md is rendered from the command tree, which only this
// package builds. `go run ./internal/gen/reference` runs this test with
// PADDOCK_WRITE_REFERENCE=1 to rewrite it; otherwise a committed page that
// differs from a fresh render fails, naming that command.
func TestCLIReference(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reference", "cli.md")
	// Some flag descriptions name this machine's PADDOCK_HOME: the page
	// shows the default one, whatever machine renders it.
	const home = "/paddock-home-for-the-reference"
	t.Setenv("PADDOCK_HOME", home)
	want := bytes.ReplaceAll(refdoc.CLI(newRootCmd()), []byte(home), []byte("~/.paddock"))
	if os.Getenv("PADDOCK_WRITE_REFERENCE") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `%s`", err, refdoc.Command)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/reference/cli.md is stale: run `%s` and commit the result", refdoc.Command)
	}
}
