package schemas

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/paddock-platform/paddock/internal/model"
)

func TestFormat(t *testing.T) {
	got, diags := Format("a.hcl", []byte("tenant \"t\" {\nnamespace=\"x\"\n  template \"y\" {\n image = \"a\"\n      command = [\"b\"]\n}\n}\n"))
	want := "tenant \"t\" {\n  namespace = \"x\"\n  template \"y\" {\n    image   = \"a\"\n    command = [\"b\"]\n  }\n}\n"
	if diags.HasErrors() || string(got) != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	if _, diags := Format("a.hcl", []byte("tenant {")); !diags.HasErrors() {
		t.Error("a broken file must not be formatted")
	}
}

// Every example is formatted: `paddock fmt -check examples/...` passes.
func TestExamplesFormatted(t *testing.T) {
	dirs, _ := filepath.Glob("../examples/*")
	more, _ := filepath.Glob("../examples/invalid/*")
	files, err := FormatTargets(append(dirs, more...))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, diags := Format(name, src)
		if diags.HasErrors() {
			continue // broken on purpose
		}
		if d := Diff(name, src, got); d != "" {
			t.Errorf("%s is not formatted:\n%s", name, d)
		}
	}
}

func TestDiff(t *testing.T) {
	a := []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n")
	b := []byte("1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\ntwelve\n13\n")
	want := `--- f
+++ f (formatted)
@@ -1,7 +1,7 @@
 1
 2
 3
-4
+four
 5
 6
 7
@@ -9,4 +9,5 @@
 9
 10
 11
-12
+twelve
+13
`
	if got := Diff("f", a, b); got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
	if Diff("f", a, a) != "" {
		t.Error("equal inputs must give no diff")
	}
	// Every edit script reproduces b from a.
	for _, c := range [][2]string{{"", "a\n"}, {"a\n", ""}, {"a\nb\nc\n", "c\nb\na\n"}, {"x\ny\n", "y\nx\ny\n"}} {
		al, bl := splitLines([]byte(c[0])), splitLines([]byte(c[1]))
		var rebuilt []string
		for _, op := range diffLines(al, bl) {
			if op.kind != '-' {
				rebuilt = append(rebuilt, op.text)
			}
		}
		if strings.Join(rebuilt, "\n") != strings.Join(bl, "\n") {
			t.Errorf("diff of %q and %q rebuilds %q", c[0], c[1], rebuilt)
		}
	}
}

func TestFormatTargets(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.hcl": "", "b.pvars.hcl": "", "c.hcl.json": "{}", ".d.hcl": "", "e.hcl~": "", "f.txt": ""})
	got, err := FormatTargets([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if strings.Join(got, " ") != "a.hcl b.pvars.hcl" {
		t.Errorf("targets = %v", got)
	}
	if _, err := FormatTargets([]string{filepath.Join(dir, "nope")}); err == nil {
		t.Error("a missing path must fail")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := JSONSchema(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(JSONSchemaID, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(JSONSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The JSON Schema compiles, documents every argument of every block, and
// accepts the JSON-syntax spec that loads (and rejects typos).
func TestJSONSchema(t *testing.T) {
	s := compileSchema(t)
	b, _ := JSONSchema(nil)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(spec *blockSpec, path string)
	walk = func(spec *blockSpec, path string) {
		for _, a := range spec.Attrs {
			if a.Doc == "" {
				t.Errorf("%s.%s has no description", path, a.Name)
			}
			if !strings.Contains(string(b), `"`+a.Name+`"`) {
				t.Errorf("schema lacks %s.%s", path, a.Name)
			}
		}
		for _, c := range spec.Blocks {
			if c.Doc == "" {
				t.Errorf("block %s.%s has no description", path, c.Type)
			}
			walk(c, path+"."+c.Type)
		}
		for k, v := range spec.Variants {
			walk(v, path+"."+k)
		}
	}
	walk(rootSpec, "spec")

	src, err := os.ReadFile("testdata/json/platform.hcl.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("the JSON spec does not validate: %v", err)
	}
	var bad any
	_ = json.Unmarshal([]byte(`{"tenant": {"t": {"namespce": "x"}}}`), &bad)
	if err := s.Validate(bad); err == nil {
		t.Error("a misspelt argument must not validate")
	}
}

// A spec in HCL's JSON syntax loads like the same spec in native syntax.
func TestLoadJSONSyntax(t *testing.T) {
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadDir("testdata/json", LoadOptions{Environ: []string{}})
	})
	if p.Name != "json-demo" || len(p.Tenants) != 2 || p.Tenants[1].Namespace != "agents-b" || p.Tenants[0].Templates[0].Image != "busybox:1.36" {
		t.Errorf("model: %+v", p)
	}
	names := []string{}
	for _, tn := range p.Tenants {
		names = append(names, tn.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a,b" {
		t.Errorf("tenants %v", names)
	}
}
