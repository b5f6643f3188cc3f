package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/paddock-platform/paddock/internal/gen/reference/refdoc"
)

// The committed pages must be exactly a fresh render: a schema argument, a
// default or a rule changed without regenerating fails here, naming the
// command.
func TestCommittedReferenceIsFresh(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pages, err := renderPages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		path := filepath.Join(root, "docs", "reference", p.name)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run `%s`", err, refdoc.Command)
			continue
		}
		if !bytes.Equal(got, p.body) {
			t.Errorf("docs/reference/%s is stale: run `%s` and commit the result", p.name, refdoc.Command)
		}
	}
}

// Every block's example in spec.md is HCL a newcomer can paste: it must parse.
func TestSpecExamplesParse(t *testing.T) {
	pages, err := renderPages(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	spec := string(pages[0].body)
	n := 0
	for {
		_, rest, ok := strings.Cut(spec, "```hcl\n")
		if !ok {
			break
		}
		src, after, _ := strings.Cut(rest, "```")
		spec = after
		n++
		if _, diags := hclsyntax.ParseConfig([]byte(src), "example.hcl", hcl.InitialPos); diags.HasErrors() {
			t.Errorf("example %d does not parse: %v\n%s", n, diags, src)
		}
	}
	if n < 20 {
		t.Errorf("spec.md has %d examples; expected one per block", n)
	}
}
