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

// The builders read arguments only through the arg* constants the schema
// declares them with (n.attr(argName), never n.attr("name")), and every
// constant is an argument the schema declares: a misspelt name would
// otherwise read as unset, silently.
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
	files, err := filepath.Glob("*.go")
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
			read++
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: argument %s is read by a string; use its arg* constant (args.go)", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if read < 50 {
		t.Errorf("found only %d argument reads", read)
	}
	// Every constant of args.go names a declared argument.
	file, err := parser.ParseFile(fset, "args.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for _, v := range vs.Values {
				name, _ := strconv.Unquote(v.(*ast.BasicLit).Value)
				if !declared[name] {
					t.Errorf("args.go: %s = %q is not an argument of any block", vs.Names[0].Name, name)
				}
			}
		}
	}
}
