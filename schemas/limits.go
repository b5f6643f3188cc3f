package schemas

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Input bounds. HCL's parser and evaluator recurse once per level of nesting,
// so a file of a few hundred kilobytes nested tens of thousands deep exhausts
// the stack (a fatal error, not a panic any code can recover); a file that is
// a device or a pipe never ends. Both are refused before anything parses
// them, with a diagnostic; the bounds are far above what a spec needs.
//
// HCL's parser holds several hundred bytes per token, so it is the number of
// tokens that bounds the memory a load takes: MaxSpecTokens keeps a load
// (parse, evaluation, policy) under a few hundred megabytes whatever the
// input, and a spec of 1,000 tenants written out one block each (about
// 600 KB, 165,000 tokens) within bounds.
const (
	// MaxSpecFileSize bounds one spec or vars file.
	MaxSpecFileSize = 1 << 20
	// MaxSpecSize bounds all the files of one load together.
	MaxSpecSize = 4 << 20
	// MaxSpecTokens bounds the tokens of all the files of one load.
	MaxSpecTokens = 400_000
	// MaxNesting bounds how deep brackets, braces, parentheses, templates
	// and template directives nest (a spec rarely goes past 8).
	MaxNesting = 64
	// MaxOperatorChain bounds the operators (binary, unary, conditional,
	// index and call) an expression chains at one level and along its
	// nesting: each is a level of the parsed expression tree.
	MaxOperatorChain = 1000
)

// readSpecFile reads a spec or vars file: a regular file (a symbolic link to
// one is fine) of at most MaxSpecFileSize bytes, and at most budget bytes.
func readSpecFile(name string, budget *int) ([]byte, *hcl.Diagnostic) {
	what := "spec"
	if strings.HasSuffix(name, VarsFileExt) {
		what = "vars"
	}
	fail := func(summary, format string, args ...any) ([]byte, *hcl.Diagnostic) {
		return nil, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   fmt.Sprintf(format, args...),
			Subject:  &hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos},
		}
	}
	// Stat before opening: opening a named pipe blocks until a writer comes.
	if info, err := os.Stat(name); err == nil && !info.Mode().IsRegular() {
		return fail("Not a regular file",
			"%s is a %s, not a regular file. Paddock reads %s files only from regular files (a device or a pipe can be endless): give the path of the file itself.",
			name, fileKind(info.Mode()), what)
	}
	f, err := os.Open(name)
	if err != nil {
		// No position: the file cannot be read at all.
		return nil, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read " + what + " file",
			Detail:   fmt.Sprintf("%s. Check that the file exists and is readable.", err),
		}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fail("Cannot read "+what+" file", "%s.", err)
	}
	if !info.Mode().IsRegular() {
		return fail("Not a regular file",
			"%s is a %s, not a regular file. Paddock reads %s files only from regular files (a device or a pipe can be endless): give the path of the file itself.",
			name, fileKind(info.Mode()), what)
	}
	limit := MaxSpecFileSize
	if budget != nil && *budget < limit {
		limit = *budget
	}
	// Read one byte past the limit, whatever the size said: a file can grow
	// between Stat and Read.
	src, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return fail("Cannot read "+what+" file", "%s.", err)
	}
	if len(src) > limit {
		if limit < MaxSpecFileSize {
			return fail("Spec too large", "The spec's files hold more than %d MiB together, the most Paddock reads in one load. Split the platform, or remove what it does not need.", MaxSpecSize>>20)
		}
		return fail("File too large", "%s is larger than %d MiB, the most Paddock reads from one spec or vars file; a spec of a thousand tenants takes about 600 KB. Split it into several files of the spec directory, or use for_each.", name, MaxSpecFileSize>>20)
	}
	if budget != nil {
		*budget -= len(src)
	}
	return src, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "device"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// syntaxMode is what a text is parsed as.
type syntaxMode int

const (
	modeConfig     syntaxMode = iota // a native-syntax file
	modeExpression                   // one expression (-var values, JSON strings)
	modeTemplate                     // a bare template (JSON strings)
)

// checkNesting reports the first place where src nests deeper than
// MaxNesting or chains more than MaxOperatorChain operators, reading HCL's
// own tokens (the lexer is iterative and linear), so that nothing deeper
// ever reaches the recursive parser. start is where src begins in its file.
func checkNesting(src []byte, filename string, start hcl.Pos, mode syntaxMode) *hcl.Diagnostic {
	_, d := checkTokens(src, filename, start, mode)
	return d
}

// checkTokens is checkNesting that also returns how many tokens src holds.
func checkTokens(src []byte, filename string, start hcl.Pos, mode syntaxMode) (int, *hcl.Diagnostic) {
	var toks hclsyntax.Tokens
	switch mode {
	case modeConfig:
		toks, _ = hclsyntax.LexConfig(src, filename, start)
	case modeExpression:
		toks, _ = hclsyntax.LexExpression(src, filename, start)
	case modeTemplate:
		toks, _ = hclsyntax.LexTemplate(src, filename, start)
	}
	return len(toks), walkNesting(toks, mode)
}

// nestFrame is one level of nesting while walking tokens.
type nestFrame struct {
	kind hclsyntax.TokenType // the opening token; TokenNil for the root
	// ops counts the operators of the expression chain at this level.
	ops int
	// directives counts the template if/for directives open in a string.
	directives int
}

func walkNesting(toks hclsyntax.Tokens, mode syntaxMode) *hcl.Diagnostic {
	root := hclsyntax.TokenNil
	if mode == modeTemplate {
		root = hclsyntax.TokenOQuote // a bare template is a string
	}
	stack := []nestFrame{{kind: root}}
	depth, chain := 0, 0 // depth: frames past the root plus directives; chain: ops along the stack
	top := func() *nestFrame { return &stack[len(stack)-1] }
	push := func(kind hclsyntax.TokenType) {
		stack = append(stack, nestFrame{kind: kind})
		depth++
	}
	pop := func() {
		f := stack[len(stack)-1]
		depth -= 1 + f.directives
		chain -= f.ops
		stack = stack[:len(stack)-1]
	}
	// popTo closes frames down to and including the nearest of kinds, without
	// crossing a string or template boundary (whose own closer ends them); it
	// does nothing when there is none (a syntax error the parser reports).
	popTo := func(kinds ...hclsyntax.TokenType) {
		for i := len(stack) - 1; i > 0; i-- {
			k := stack[i].kind
			for _, want := range kinds {
				if k == want {
					for len(stack) > i {
						pop()
					}
					return
				}
			}
			if k == hclsyntax.TokenOQuote || k == hclsyntax.TokenOHeredoc || k == hclsyntax.TokenTemplateInterp || k == hclsyntax.TokenTemplateControl {
				return
			}
		}
	}
	op := func() {
		top().ops++
		chain++
	}
	reset := func() {
		chain -= top().ops
		top().ops = 0
	}
	for i, tok := range toks {
		switch tok.Type {
		case hclsyntax.TokenOBrace:
			push(tok.Type)
		case hclsyntax.TokenCBrace:
			popTo(hclsyntax.TokenOBrace)
		case hclsyntax.TokenOBrack, hclsyntax.TokenOParen:
			op() // an index or a call extends the chain it follows
			push(tok.Type)
		case hclsyntax.TokenCBrack:
			popTo(hclsyntax.TokenOBrack)
		case hclsyntax.TokenCParen:
			popTo(hclsyntax.TokenOParen)
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			push(tok.Type)
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			popTo(hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc)
		case hclsyntax.TokenTemplateInterp:
			push(tok.Type)
		case hclsyntax.TokenTemplateControl:
			// if and for directives nest the template around them.
			str := top()
			if j := nextSignificant(toks, i+1); j >= 0 && toks[j].Type == hclsyntax.TokenIdent {
				switch string(toks[j].Bytes) {
				case "if", "for":
					str.directives++
					depth++
				case "endif", "endfor":
					if str.directives > 0 {
						str.directives--
						depth--
					}
				}
			}
			push(tok.Type)
		case hclsyntax.TokenTemplateSeqEnd:
			popTo(hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl)
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr,
			hclsyntax.TokenBang, hclsyntax.TokenQuestion:
			op()
		case hclsyntax.TokenComma:
			reset()
		case hclsyntax.TokenNewline:
			// A newline ends an attribute in a body or an object; inside
			// brackets and parentheses it is only white space.
			if k := top().kind; k == hclsyntax.TokenNil || k == hclsyntax.TokenOBrace {
				reset()
			}
		}
		switch {
		case depth > MaxNesting:
			return nestingDiag(tok.Range, "Spec nested too deeply",
				"This is nested more than %d levels deep (brackets, braces, parentheses, strings and template directives inside each other). Paddock refuses it before parsing, so that no spec can exhaust the parser; no platform needs that much nesting: flatten it, with locals for the parts.", MaxNesting)
		case chain > MaxOperatorChain:
			return nestingDiag(tok.Range, "Expression too long",
				"This expression chains more than %d operators (each +, -, !, ==, &&, ?, index and call is one level of the parsed expression). Paddock refuses it before parsing, so that no spec can exhaust the evaluator: split it into locals.", MaxOperatorChain)
		}
	}
	return nil
}

func nestingDiag(at hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: at.Ptr()}
}

// nextSignificant is the index of the first token from i that is not a
// template strip marker or white space, or -1.
func nextSignificant(toks hclsyntax.Tokens, i int) int {
	for ; i < len(toks); i++ {
		if toks[i].Type != hclsyntax.TokenNewline {
			return i
		}
	}
	return -1
}

// checkJSONNesting bounds a file in HCL's JSON syntax: the nesting of its
// arrays and objects, and every string in it, which HCL may parse as a
// template or as an expression (a variable's type, a traversal), each
// checked both ways.
func checkJSONNesting(src []byte, filename string) (int, *hcl.Diagnostic) {
	depth, line, col, tokens := 0, 1, 1, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\n':
			line, col = line+1, 0
		case '[', '{':
			depth++
			tokens++
			if depth > MaxNesting {
				at := hcl.Pos{Line: line, Column: col, Byte: i}
				return tokens, nestingDiag(hcl.Range{Filename: filename, Start: at, End: hcl.Pos{Line: line, Column: col + 1, Byte: i + 1}},
					"Spec nested too deeply",
					"This is nested more than %d levels deep (arrays and objects inside each other). Paddock refuses it before parsing, so that no spec can exhaust the parser; no platform needs that much nesting.", MaxNesting)
			}
		case ']', '}':
			tokens++
			if depth > 0 {
				depth--
			}
		case ',', ':':
			tokens++
		case '"':
			tokens++
			end := jsonStringEnd(src, i)
			raw := src[i:end]
			var s string
			if json.Unmarshal(raw, &s) == nil && strings.ContainsAny(s, "([{!-?$%") {
				// The string's own positions are approximate (escapes), its
				// first line is exact.
				at := hcl.Pos{Line: line, Column: col + 1, Byte: i + 1}
				for _, mode := range []syntaxMode{modeTemplate, modeExpression} {
					n, d := checkTokens([]byte(s), filename, at, mode)
					if d != nil {
						return tokens, d
					}
					if mode == modeTemplate {
						tokens += n
					}
				}
			}
			col += end - i - 1
			i = end - 1
		}
		col++
	}
	return tokens, nil
}

// jsonStringEnd is the index just past the string that starts at src[i]
// (the end of src when it never closes).
func jsonStringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}
