package schemas

import (
	"strconv"
	"strings"
	"testing"
)

// Numbers beyond ±1e1000 are refused before anything converts them to
// text, which would take seconds to hours (found by FuzzLoad).
func TestHugeNumbers(t *testing.T) {
	tpl := func(arg string) string {
		return "platform { name = \"a\" }\ntarget \"local\" {}\nagent_sandbox { version = \"v0.5.6\" }\ntenant \"t\" {\n  template \"x\" {\n    image = \"a:1\"\n    " + arg + "\n  }\n}\n"
	}
	tests := []struct {
		name, src, file string
		opts            LoadOptions
		want            string
	}{
		{"literal", tpl("run_as_user = 1e9999999"), "spec.hcl", LoadOptions{}, "Number out of range"},
		{"negative exponent", tpl("run_as_user = 1e-9999999"), "spec.hcl", LoadOptions{}, "Number out of range"},
		{"in a template", tpl(`tmp_size = "${1e99999999}Mi"`), "spec.hcl", LoadOptions{}, "Number out of range"},
		{"tonumber", tpl(`run_as_user = tonumber("1e99999999")`), "spec.hcl", LoadOptions{}, "numbers stay within ±1e1000"},
		{"jsondecode", tpl(`run_as_user = jsondecode("1e99999999")`), "spec.hcl", LoadOptions{}, "numbers stay within ±1e1000"},
		{"product", tpl(`run_as_user = 1e900 * 1e900 * 1e900 * 1e900`), "spec.hcl", LoadOptions{}, "Number out of range"},
		{"json syntax", `{"platform": {"name": "a"}, "target": {"local": {}}, "agent_sandbox": {"version": "v0.5.6"}, "tenant": {"t": {"template": {"x": {"image": "a", "run_as_user": 1e99999999}}}}}`, "spec.hcl.json", LoadOptions{}, "Number out of range"},
		{"json template", `{"platform": {"name": "${1e99999999}"}}`, "spec.hcl.json", LoadOptions{}, "Number out of range"},
		{"-var", "variable \"n\" { type = number }\n" + tpl("run_as_user = var.n"), "spec.hcl", LoadOptions{Vars: map[string]string{"n": "1e99999999"}}, "Number out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Environ = []string{}
			l := NewLoader()
			p, diags := l.LoadSource(tt.file, []byte(tt.src), tt.opts)
			var b strings.Builder
			l.WriteDiagnostics(&b, diags)
			if p != nil || !strings.Contains(b.String(), tt.want) {
				t.Errorf("want %q, got:\n%s", tt.want, b.String())
			}
		})
	}
	// Ordinary numbers are fine, also in JSON and strings that look numeric.
	if _, diags := LoadSource("spec.hcl", []byte(tpl(`run_as_user = 1e4`)+"locals { d = \"sha256:01e23456789\" }\n"), LoadOptions{Environ: []string{}}); diags.HasErrors() {
		t.Error(diags)
	}
	for s, huge := range map[string]bool{"1e1000": false, "1e1001": true, "-1e-1001": true, "123.456": false, strings.Repeat("9", 1002): true, "0.000001": false} {
		if jsonNumberHuge(s) != huge {
			t.Errorf("jsonNumberHuge(%.20q) = %v", s, !huge)
		}
	}
}

// The evaluation budget stops expressions that would take seconds and
// gigabytes, with a diagnostic. The test asserts the diagnostic, not a wall-clock
// bound (flaky on a shared machine): a regression to a hang trips go test's
// -timeout, and the cost of evaluation is measured by the benchmarks.
func TestEvaluationBudget(t *testing.T) {
	head := "platform { name = \"a\" }\ntarget \"local\" {}\nagent_sandbox { version = \"v0.5.6\" }\n"
	for name, c := range map[string]struct{ src, want string }{
		"nested for over range":   {`locals { x = [for a in range(1024): [for b in range(1024): 1]] }`, "produce more than 10000 numbers"},
		"flatten of ranges":       {`locals { x = flatten([for a in range(1024): range(1024)]) }`, "produce more than 10000 numbers"},
		"doubling locals":         {"locals {\n  a0 = join(\"\", [for i in range(1000): \"xxxxxxxxxx\"])\n" + doubling(12) + "}", "Local value too large"},
		"doubling through concat": {"locals {\n  l0 = range(1000)\n" + concatDoubling(12) + "}", "too large for a spec"},
		"indent":                  {`locals { x = indent(100000000, "a\nb") }`, "indent takes at most 1000 spaces"},
	} {
		t.Run(name, func(t *testing.T) {
			_, diags := LoadSource("spec.hcl", []byte(head+c.src+"\n"), LoadOptions{Environ: []string{}})
			if !strings.Contains(diags.Error(), c.want) {
				t.Errorf("want %q, got %v", c.want, diags)
			}
		})
	}
	// What a spec really does stays well within the budget.
	if _, diags := LoadSource("spec.hcl", []byte(head+`locals { x = [for a in range(100): [for b in range(10): "${a}-${b}"]] }`+"\n"), LoadOptions{Environ: []string{}}); diags.HasErrors() {
		t.Error(diags)
	}
}

func doubling(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("  a" + strconv.Itoa(i) + " = \"${local.a" + strconv.Itoa(i-1) + "}${local.a" + strconv.Itoa(i-1) + "}\"\n")
	}
	return b.String()
}

func concatDoubling(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("  l" + strconv.Itoa(i) + " = concat(local.l" + strconv.Itoa(i-1) + ", local.l" + strconv.Itoa(i-1) + ")\n")
	}
	return b.String()
}
