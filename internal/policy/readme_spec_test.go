package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/spectest"
)

// The README's spec is the first one a newcomer copies: it must load, pass the
// policy and name only images the local node holds, so it runs as written.
func TestReadmeSpecRunsOnTheLocalStack(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```hcl\n")
	if !ok {
		t.Fatal("README.md has no hcl block")
	}
	spec, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md's first hcl block is not closed")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	p := spectest.Load(t, dir)
	if r := policy.Check(p, time.Now()); r.Blocking() {
		t.Fatalf("the README's spec is refused by policy: %s", r.Summary())
	}
	for _, tn := range p.Tenants {
		for _, tpl := range tn.Templates {
			if tpl.Image != localcluster.SandboxImage {
				t.Errorf("tenant %s template %s names image %q; the local node holds only %q", tn.Name, tpl.Name, tpl.Image, localcluster.SandboxImage)
			}
		}
	}
}
