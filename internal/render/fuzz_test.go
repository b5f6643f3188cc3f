package render_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/hangguard"

	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/schemas"
)

// FuzzRender feeds arbitrary bytes through the whole of `paddock render`:
// load, policy, the rendered objects, the sensitive-value scan and the YAML
// writer. Whatever the input: no panic, no load of more than ten seconds,
// and validate and render agree: a spec that loads renders (a value the
// decoder accepts never fails later, without a location). Seeds are the
// examples plus testdata/fuzz/FuzzRender.
//
//	go test ./internal/render -run '^$' -fuzz FuzzRender -fuzztime 1m
func FuzzRender(f *testing.F) {
	seeds, _ := filepath.Glob("../../examples/*/*.hcl")
	for _, name := range seeds {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`platform { name = "p" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "a" {
  egress {
    fqdns = ["api.example.com"]
    allow {
      cidr  = "10.0.0.0/8"
      ports = [443]
    }
    proxy {
      url  = "http://10.1.2.3:3128"
      cidr = "10.1.2.3/32"
    }
  }
  template "t" {
    image         = "r.example.com/a:1"
    runtime_class = "gvisor"
    env           = { A = "b" }
  }
  warm_pool "t" { template = "t" }
}
`))
	f.Fuzz(func(t *testing.T, src []byte) {
		// A render takes well under a second of CPU; a minute is a hang.
		defer hangguard.CPUWatchdog(time.Minute, func() string { return fmt.Sprintf("render of %q", src) })()
		p, diags := schemas.LoadSource("fuzz.hcl", src, schemas.LoadOptions{Environ: []string{}})
		if p == nil {
			if !diags.HasErrors() {
				t.Fatal("no platform and no error")
			}
			return
		}
		_ = policy.Check(p, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		files, order, err := render.Files(p)
		if err != nil {
			t.Fatalf("the spec loads but does not render: %v", err)
		}
		if len(files) != len(order) || !strings.HasPrefix(string(files["kustomization.yaml"]), render.Header) {
			t.Fatalf("%d files, order %v", len(files), order)
		}
		if _, err := render.Sensitive(p); err != nil {
			t.Fatal(err)
		}
		objs, err := render.All(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := render.WriteYAML(io.Discard, objs); err != nil {
			t.Fatal(err)
		}
	})
}
