package schemas

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// FuzzLoad feeds arbitrary bytes through parse, decode and build, and through
// WriteDiagnostics. Whatever the input: no panic, a platform xor errors, and
// every error points into the file. A watchdog turns a hang (Go's fuzzer has
// no per-input timeout) into a crash that records the input. Seeds are the examples plus the committed
// corpus in testdata/fuzz/FuzzLoad.
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

	f.Fuzz(func(t *testing.T, src []byte) {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("WATCHDOG: load of %q takes more than 10s", src))
			}
		}()
		l := NewLoader()
		p, diags := l.LoadSource("fuzz.hcl", src, LoadOptions{})
		if diags.HasErrors() == (p != nil) {
			t.Fatalf("platform %v with diagnostics %v: want exactly one of them", p, diags)
		}
		for _, d := range diags {
			if d == nil {
				t.Fatal("nil diagnostic")
			}
			if d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Filename != "fuzz.hcl") {
				t.Fatalf("error %q (%s) does not point into the file: %v", d.Summary, d.Detail, d.Subject)
			}
		}
		l.WriteDiagnostics(io.Discard, diags)
	})
}
