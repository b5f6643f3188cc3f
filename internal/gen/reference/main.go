// Command reference writes the reference pages under docs/reference from the
// code, so they cannot drift from what Paddock accepts and checks. spec.md
// comes from the JSON Schema `paddock schema` prints (package schemas' spec
// language tree), with example values from examples/; rules.md from the
// policy rule registry (`paddock validate --rules`); cli.md from the CLI's
// command tree, which only package main of cmd/paddock builds, so this runs
// that package's TestCLIReference with PADDOCK_WRITE_REFERENCE=1 to write it.
//
//	go run ./internal/gen/reference
//
// A test here (spec.md, rules.md) and TestCLIReference (cli.md) fail when a
// committed page differs from a fresh render.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	root := repoRoot()
	pages, err := renderPages(root)
	if err != nil {
		fail(err)
	}
	dir := filepath.Join(root, "docs", "reference")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	for _, p := range pages {
		path := filepath.Join(dir, p.name)
		if err := os.WriteFile(path, p.body, 0o644); err != nil {
			fail(err)
		}
		fmt.Println("wrote", path)
	}
	// cli.md: the command tree is built in package main of cmd/paddock, so
	// its test renders it (see cmd/paddock/reference_test.go).
	cmd := exec.Command("go", "test", "./cmd/paddock/", "-run", "^TestCLIReference$", "-count=1")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PADDOCK_WRITE_REFERENCE=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("writing cli.md (go test ./cmd/paddock/ -run TestCLIReference): %w", err))
	}
	fmt.Println("wrote", filepath.Join(dir, "cli.md"))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "reference:", err)
	os.Exit(1)
}

// page is one generated file of docs/reference.
type page struct {
	name string
	body []byte
}

// renderPages renders the pages this package owns (cli.md is cmd/paddock's).
func renderPages(root string) ([]page, error) {
	spec, err := renderSpec(filepath.Join(root, "examples"))
	if err != nil {
		return nil, fmt.Errorf("spec.md: %w", err)
	}
	rules, err := renderRules()
	if err != nil {
		return nil, fmt.Errorf("rules.md: %w", err)
	}
	return []page{{"spec.md", spec}, {"rules.md", rules}}, nil
}

func repoRoot() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "."
	}
	return strings.TrimSpace(string(out))
}
