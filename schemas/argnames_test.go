package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every argument name the builders read (n.attr("name")) is an argument the
// schema declares: a misspelt name would otherwise read as unset, silently.
func TestBuildersReadOnlyDeclaredArguments(t *testing.T) {
	declared := map[string]bool{}
	var walk func(s *blockSpec)
	walk = func(s *blockSpec) {
		for _, a := range s.Attrs {
			declared[a.Name] = true
		}
		for _, b := range s.Blocks {
			walk(b)
		}
		for _, v := range s.Variants {
			walk(v)
		}
	}
	walk(rootSpec)
	files, err := filepath.Glob("build*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "attr" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			read++
			if !declared[name] {
				t.Errorf("%s: the builders read argument %q, which no block of the schema declares", fset.Position(lit.Pos()), name)
			}
			return true
		})
	}
	if read < 50 {
		t.Errorf("found only %d argument reads in build*.go", read)
	}
}
