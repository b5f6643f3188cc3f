package schemas

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The limits are written down where a spec author looks (the README and
// `paddock schema`), in the words of the code that enforces them.
func TestLimitsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	b, err := JSONSchema(nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, l := range Limits() {
		if !strings.Contains(string(readme), "- "+l+"\n") {
			t.Errorf("README does not say: %s", l)
		}
		if !strings.Contains(doc["description"].(string), l) {
			t.Errorf("paddock schema does not say: %s", l)
		}
	}
	tenant := doc["properties"].(map[string]any)["tenant"].(map[string]any)
	if tenant["maxProperties"] != float64(MaxTenants) || !strings.Contains(tenant["description"].(string), "at most 1,000 tenants") {
		t.Errorf("tenant schema: %v", tenant)
	}
}

// One bound of tenants, however they are written; range() bounded per call
// and per load, as documented, with a message naming both.
func TestTenantAndRangeLimits(t *testing.T) {
	tenants := func(n int, prefix string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "tenant \"%s%d\" {}\n", prefix, i)
		}
		return b.String()
	}
	forEach := func(n int) string {
		return fmt.Sprintf("tenant \"x\" {\n  for_each = toset([for i in range(%d) : \"f${i}\"])\n}\n", n)
	}
	for _, c := range []struct {
		name, src string
		err       string // "" for none
		line      int
	}{
		{"1,000 tenant blocks", head + tenants(1000, "t"), "", 0},
		{"1,001 tenant blocks", head + tenants(1001, "t"), "makes tenant number 1001", 5 + 1000},
		{"for_each of 1,000", head + forEach(1000), "", 0},
		{"blocks and for_each together", head + tenants(600, "t") + forEach(401), "for_each makes tenant number 1001", 5 + 600 + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, diags := LoadSource("spec.hcl", []byte(c.src), LoadOptions{Environ: []string{}})
			if c.err == "" {
				if diags.HasErrors() || p == nil {
					t.Fatalf("%v", diags)
				}
				return
			}
			for _, d := range diags {
				if d.Summary == "Too many tenants" {
					if !strings.Contains(d.Detail, c.err) || !strings.Contains(d.Detail, "at most 1000 tenants") || d.Subject == nil || d.Subject.Start.Line != c.line {
						t.Errorf("%s at %v", d.Detail, d.Subject)
					}
					return
				}
			}
			t.Errorf("no Too many tenants: %v", diags)
		})
	}
	// A for_each of more than 1,000 elements, from a variable.
	src := head + "variable \"teams\" { type = list(string) }\ntenant \"x\" {\n  for_each = toset(var.teams)\n}\n"
	var teams []string
	for i := 0; i < 1001; i++ {
		teams = append(teams, fmt.Sprintf("%q", fmt.Sprintf("team-%d", i)))
	}
	_, diags := LoadSource("spec.hcl", []byte(src), LoadOptions{Vars: map[string]string{"teams": "[" + strings.Join(teams, ",") + "]"}, Environ: []string{}})
	if !strings.Contains(diags.Error(), "for_each makes 1001 tenants; a platform has at most 1000 tenants") {
		t.Errorf("for_each of 1,001: %v", diags)
	}

	for _, c := range []struct{ expr, err string }{
		{"range(1024)", ""},
		{"range(2000)", "range() makes at most 1024 numbers in one call (and 10000 in all the calls of a spec); this call would make 2000"},
		{"range(0, 3000, 2)", "this call would make 1500"},
		{"range(10, 0)", ""},
		{"[for i in range(10) : range(1000)]", "produce more than 10000 numbers in all"},
	} {
		_, diags := LoadSource("spec.hcl", []byte(head+"locals {\n  a = "+c.expr+"\n}\n"), LoadOptions{Environ: []string{}})
		if c.err == "" && diags.HasErrors() || c.err != "" && !strings.Contains(diags.Error(), c.err) {
			t.Errorf("%s: %v", c.expr, diags)
		}
	}
}
