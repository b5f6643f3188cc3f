package schemas

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/hangguard"
	"github.com/paddock-platform/paddock/internal/model"
)

// Hostile nesting is refused before the parser sees it, with a diagnostic at
// the place it goes too deep, whatever syntax carries it: the parser and
// evaluator recurse once per level, and 70,000 levels were a fatal stack
// overflow.
func TestNestingBounded(t *testing.T) {
	const n = 70000
	deepList := "locals {\n  a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n}\n"
	for _, c := range []struct {
		name, file, src string
		summary         string
		line            int
	}{
		{"list", "spec.hcl", head + deepList, "Spec nested too deeply", 6},
		{"parentheses", "spec.hcl", head + "locals {\n  a = " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + "\n}\n", "Spec nested too deeply", 6},
		{"blocks", "spec.hcl", head + strings.Repeat("tenant \"a\" {\n", n), "Spec nested too deeply", 5 + MaxNesting},
		{"templates", "spec.hcl", head + "locals {\n  a = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) + "\n}\n", "Spec nested too deeply", 6},
		{"template directives", "spec.hcl", head + "locals {\n  a = \"" + strings.Repeat("%{if true}", 20000) + strings.Repeat("%{endif}", 20000) + "\"\n}\n", "Spec nested too deeply", 6},
		{"heredocs", "spec.hcl", head + "locals {\n  a = " + strings.Repeat("<<EOT\n${", 2000) + "1" + strings.Repeat("}\nEOT\n", 2000) + "}\n", "Spec nested too deeply", 6 + MaxNesting/2},
		{"negations", "spec.hcl", head + "locals {\n  a = " + strings.Repeat("!", 200000) + "true\n}\n", "Expression too long", 6},
		{"conditionals", "spec.hcl", head + "locals {\n  a = " + strings.Repeat("true ? 1 : ", 50000) + "2\n}\n", "Expression too long", 6},
		{"operator chain", "spec.hcl", head + "locals {\n  a = " + strings.Repeat("1 + ", 100000) + "1\n}\n", "Expression too long", 6},
		{"index chain", "spec.hcl", head + "locals {\n  l = [1]\n  a = local.l" + strings.Repeat("[local.l[0] - 1]", 20000) + "\n}\n", "Expression too long", 7},
		{"json arrays", "spec.hcl.json", `{"locals": {"a": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`, "Spec nested too deeply", 1},
		{"json template", "spec.hcl.json", `{"locals": {"a": "` + strings.Repeat("${[", n) + strings.Repeat("]}", n) + `"}}`, "Spec nested too deeply", 1},
		{"json type expression", "spec.hcl.json", `{"variable": {"v": {"type": "` + strings.Repeat("list(", n) + "string" + strings.Repeat(")", n) + `"}}}`, "Spec nested too deeply", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := NewLoader()
			p, diags := l.LoadSource(c.file, []byte(c.src), LoadOptions{Environ: []string{}})
			if p != nil || len(diags) != 1 || diags[0].Summary != c.summary {
				t.Fatalf("want one %q diagnostic, got %v", c.summary, diags)
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Filename != c.file || d.Subject.Start.Line != c.line {
				t.Errorf("at %v, want %s line %d", d.Subject, c.file, c.line)
			}
			var out strings.Builder
			l.WriteDiagnostics(&out, diags)
			if out.Len() > 4000 {
				t.Errorf("the diagnostic prints %d bytes", out.Len())
			}
			if c.file == "spec.hcl" {
				if _, fdiags := Format(c.file, []byte(c.src)); len(fdiags) != 1 || fdiags[0].Summary != c.summary {
					t.Errorf("Format: %v", fdiags)
				}
			}
		})
	}

	// Values given from outside: -var and a vars file.
	spec := []byte(head + "variable \"v\" { type = list(any) }\n")
	_, diags := LoadSource("spec.hcl", spec, LoadOptions{Vars: map[string]string{"v": strings.Repeat("[", n) + strings.Repeat("]", n)}, Environ: []string{}})
	if !strings.Contains(diags.Error(), "Spec nested too deeply") {
		t.Errorf("-var: %v", diags)
	}
	vars := filepath.Join(t.TempDir(), "deep.pvars.hcl")
	if err := os.WriteFile(vars, []byte("v = "+strings.Repeat("[", n)+strings.Repeat("]", n)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, diags := LoadSource("spec.hcl", spec, LoadOptions{VarFiles: []string{vars}, Environ: []string{}}); !strings.Contains(diags.Error(), "Spec nested too deeply") {
		t.Errorf("vars file: %v", diags)
	}

	// What a real spec nests stays well within the bound.
	ok := head + "locals {\n  a = " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "\n  b = " + strings.Repeat("1 + ", 500) + "1\n}\n"
	if _, diags := LoadSource("spec.hcl", []byte(ok), LoadOptions{Environ: []string{}}); diags.HasErrors() {
		t.Errorf("30 levels and 500 operators: %v", diags)
	}
}

// Spec and vars files are read only from regular files, and only up to a
// size: a symbolic link to /dev/zero was read until memory ran out, and a
// named pipe would block forever.
func TestSpecFilesBounded(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.hcl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxSpecFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path    string
		summary string
	}{
		{zero, "Not a regular file"},
		{fifo, "Not a regular file"},
		{big, "File too large"},
	} {
		_, diags := LoadDir(c.path, LoadOptions{Environ: []string{}})
		if len(diags) != 1 || diags[0].Summary != c.summary || !strings.Contains(diags[0].Detail, c.path) {
			t.Errorf("%s: %v", c.path, diags)
		}
		var out strings.Builder
		WriteDiagnostics(&out, nil, diags) // reads the file for a snippet: must refuse it again
		if out.Len() > 2000 {
			t.Errorf("%s: the diagnostic prints %d bytes", c.path, out.Len())
		}
		if _, d := ReadSpecFile(c.path); len(d) != 1 || d[0].Summary != c.summary {
			t.Errorf("ReadSpecFile(%s): %v", c.path, d)
		}
	}
	// In a spec directory, such files are refused the same way.
	_, diags := LoadDir(dir, LoadOptions{Environ: []string{}})
	var summaries []string
	for _, d := range diags {
		summaries = append(summaries, d.Summary)
	}
	if got := strings.Join(summaries, ", "); got != "File too large, Not a regular file, Not a regular file" {
		t.Errorf("spec directory: %s", got)
	}
	// As a vars file too.
	_, diags = LoadSource("spec.hcl", []byte(head), LoadOptions{VarFiles: []string{zero}, Environ: []string{}})
	if !strings.Contains(diags.Error(), "Not a regular file") {
		t.Errorf("vars file: %v", diags)
	}
}

// manyLocals is a spec of n locals, each naming the next, and one that
// reads them all.
func manyLocals(n int) []byte {
	var b strings.Builder
	b.WriteString(head + "locals {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  a%d = local.a%d + 1\n", i, i+1)
	}
	fmt.Fprintf(&b, "  a%d = 1\n  all = length(keys(local))\n}\n", n)
	return []byte(b.String())
}

// Locals cost time in proportion to their number: each expression sees the
// locals it names, not an object of all of them rebuilt per local (8,000
// locals took 25 s, 20,000 about two and a half minutes).
func TestManyLocalsLoadInLinearTime(t *testing.T) {
	const n = 20000
	src := manyLocals(n)
	// Linear, this loads in about a second (BenchmarkManyLocals); the
	// quadratic cost it replaced took minutes.
	loaded := hangguard.Within(t, time.Minute, fmt.Sprintf("loading %d locals", n), func() *model.Platform {
		p, diags := LoadSource("spec.hcl", src, LoadOptions{Environ: []string{}})
		if p == nil {
			t.Error(diags)
		}
		return p
	})
	if loaded == nil {
		t.FailNow()
	}
}
