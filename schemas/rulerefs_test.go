package schemas

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/policy"
)

func ruleTitle(id string) (string, bool) {
	if r, ok := policy.Lookup(id); ok {
		return r.Title, true
	}
	return "", false
}

// Every policy rule the language names (the reference `paddock schema`
// prints, and the decoder's messages) exists in the rule registry, and the
// reference is generated from it: `paddock schema` once sent readers to a
// PDK-111 that never existed.
func TestRuleReferencesExist(t *testing.T) {
	b, err := JSONSchema(ruleTitle)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, "LOOSENS: resources that get no limit at all. Policy: PDK-308 (Container limits missing).") {
		t.Error("resources.unbounded does not name PDK-308 by its registry title")
	}

	var walk func(s *blockSpec)
	walk = func(s *blockSpec) {
		ids := append([]string(nil), s.Rules...)
		for _, a := range s.Attrs {
			ids = append(ids, a.Rules...)
		}
		for _, id := range ids {
			if _, ok := policy.Lookup(id); !ok {
				t.Errorf("block %s names rule %s, which does not exist", s.Type, id)
			}
		}
		for _, c := range s.Blocks {
			walk(c)
		}
		for _, v := range s.Variants {
			walk(v)
		}
	}
	walk(rootSpec)

	// Rule IDs written in the package's own text (messages, docs).
	idRe := regexp.MustCompile(`\b(PDK|GCP)-[0-9]{3}\b`)
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range idRe.FindAllString(string(src), -1) {
			if _, ok := policy.Lookup(id); !ok {
				t.Errorf("%s names rule %s, which does not exist", f, id)
			}
		}
	}

	// A reference to a rule the registry does not know fails the schema.
	if _, err := JSONSchema(func(id string) (string, bool) { return "", id != "PDK-308" }); err == nil || !strings.Contains(err.Error(), "PDK-308") {
		t.Errorf("unknown rule: %v", err)
	}
}
