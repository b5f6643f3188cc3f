package schemas

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/hangguard"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
)

// watchdog turns a hang (Go's fuzzer has no per-input timeout) into a crash
// that records the input: a load takes well under a second of CPU, so a
// minute of it is a hang (CPU, not the clock: a starved test is no hang).
// Stop it by calling the returned func.
func watchdog(input any) func() {
	return hangguard.CPUWatchdog(time.Minute, func() string { return fmt.Sprintf("load of %q", input) })
}

// checkLoad asserts the load invariants: a platform xor errors, every error
// points into the file (when want is set), and everything downstream of a
// loaded platform (policy, every report format) runs without panicking.
func checkLoad(t *testing.T, l *Loader, p *model.Platform, diags hcl.Diagnostics, want string) {
	t.Helper()
	if diags.HasErrors() == (p != nil) {
		t.Fatalf("platform %v with diagnostics %v: want exactly one of them", p, diags)
	}
	for _, d := range diags {
		if d == nil {
			t.Fatal("nil diagnostic")
		}
		if want != "" && d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Filename != want) {
			t.Fatalf("error %q (%s) does not point into the file: %v", d.Summary, d.Detail, d.Subject)
		}
	}
	l.WriteDiagnostics(io.Discard, diags)
	if p == nil {
		return
	}
	r := policy.Check(p, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	files := l.Files()
	_ = r.WriteText(io.Discard, policy.TextOptions{Source: func(name string) ([]byte, bool) {
		if f := files[name]; f != nil {
			return f.Bytes, true
		}
		return nil, false
	}})
	_ = policy.WriteJSON(io.Discard, r, nil)
	_ = policy.WriteSARIF(io.Discard, r, nil, "fuzz")
	if r.Blocking() != (r.Count(policy.Error) > 0) {
		t.Fatal("Blocking disagrees with the error count")
	}
}

// FuzzLoad feeds arbitrary bytes through parse, decode, evaluation and build,
// then through policy, every report format, WriteDiagnostics and Format.
// Whatever the input: no panic, a platform xor errors, and every error points
// into the file. Seeds are the examples plus the committed corpus in
// testdata/fuzz/FuzzLoad.
//
//	go test ./schemas -run '^$' -fuzz FuzzLoad -fuzztime 1m -fuzzminimizetime 5s
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*/*.hcl")
	more, _ := filepath.Glob("../examples/invalid/*/*.hcl")
	merge, _ := filepath.Glob("testdata/merge/*.hcl")
	for _, name := range append(append(seeds, more...), merge...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimalSpec))
	f.Add([]byte(varSpec))

	f.Fuzz(func(t *testing.T, src []byte) {
		done := watchdog(src)
		defer done()
		l := NewLoader()
		p, diags := l.LoadSource("fuzz.hcl", src, LoadOptions{Environ: []string{}})
		checkLoad(t, l, p, diags, "fuzz.hcl")
		_, _ = Format("fuzz.hcl", src)
	})
}

// sensitiveSpec uses a sensitive variable everywhere a value can go wrong.
const sensitiveSpec = `
variable "secret" {
  type      = string
  sensitive = true
  validation {
    condition     = strlen(var.secret) < 40
    error_message = "too long: ${var.secret}"
  }
}
locals {
  derived = "x-${var.secret}"
}
platform { name = var.secret }
target "kubeconfig" { context = var.secret }
agent_sandbox {
  version = var.secret
  image   = "${var.secret}:v1"
}
runtime_class "gvisor" {
  handler       = var.secret
  node_selector = { (var.secret) = var.secret }
  toleration {
    key   = var.secret
    value = local.derived
  }
}
tenant "t" {
  namespace = local.derived
  egress {
    fqdns = [var.secret]
    proxy {
      url       = "http://${var.secret}:3128"
      namespace = var.secret
    }
  }
  template "x" {
    image         = local.derived
    runtime_class = var.secret
    tmp_size      = var.secret
    env           = { (var.secret) = var.secret }
    secret_env "K" {
      secret = var.secret
      key    = var.secret
    }
  }
}
waiver {
  rule    = var.secret
  reason  = var.secret
  expires = var.secret
  scope   = var.secret
}
`

// FuzzVars gives arbitrary values to a sensitive variable used in every kind
// of argument: besides the load invariants, the value never appears in a
// diagnostic, a rendered diagnostic or a policy report.
//
//	go test ./schemas -run '^$' -fuzz FuzzVars -fuzztime 1m
func FuzzVars(f *testing.F) {
	for _, s := range []string{"s3cr3t-value", "Hunter2 Secret", "a\nb\"c", "gvisor", "v1.2.3", "10.0.0.0/8", "${x}", "PDK-306", "2026-12-31", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		done := watchdog(value)
		defer done()
		for _, origin := range []LoadOptions{
			{Vars: map[string]string{"secret": value}, Environ: []string{}},
			{Environ: []string{EnvVarPrefix + "secret=" + value}},
		} {
			if strings.ContainsRune(value, 0) && origin.Vars == nil {
				continue // an environment cannot hold NUL
			}
			l := NewLoader()
			p, diags := l.LoadSource("fuzz.hcl", []byte(sensitiveSpec), origin)
			checkLoad(t, l, p, diags, "")
			if len(value) < 6 || strings.ContainsAny(value, "()") || strings.Contains(sensitiveSpec, value) ||
				strings.Contains("(sensitive value)", value) {
				continue // too short or too common to tell a leak from a coincidence
			}
			var text strings.Builder
			for _, d := range diags {
				text.WriteString(d.Summary + "\n" + d.Detail + "\n")
			}
			l.WriteDiagnostics(&text, diags)
			if p != nil {
				_ = policy.Check(p, time.Now()).WriteText(&text, policy.TextOptions{NoSnippets: true})
			}
			escaped := strconv.Quote(value)
			if out := text.String(); strings.Contains(out, value) || strings.Contains(out, escaped[1:len(escaped)-1]) {
				t.Fatalf("sensitive value %q leaked:\n%s", value, out)
			}
		}
	})
}

// FuzzJSONSpec feeds arbitrary bytes through the JSON syntax of the spec.
//
//	go test ./schemas -run '^$' -fuzz FuzzJSONSpec -fuzztime 1m
func FuzzJSONSpec(f *testing.F) {
	if b, err := os.ReadFile("testdata/json/platform.hcl.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"platform": {"name": "x"}, "target": {"local": {}}, "agent_sandbox": {"version": "v0.5.6"}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		done := watchdog(src)
		defer done()
		l := NewLoader()
		p, diags := l.LoadSource("fuzz.hcl.json", src, LoadOptions{Environ: []string{}})
		checkLoad(t, l, p, diags, "fuzz.hcl.json")
	})
}
