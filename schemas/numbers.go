package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Numbers in a spec are small: replicas, ports, UIDs. HCL and cty hold them
// as arbitrary-precision floats, whose conversion to decimal text (in a
// message, a string attribute or a template) costs time quadratic in the
// exponent: 1e9999999 takes seconds, larger ones hang. So every number a spec
// can write or parse is kept within ±1e1000 (a binary exponent of 3400), and
// the few functions that turn text into numbers are guarded too.
const maxBinaryExponent = 3400

// hugeNumber reports whether v is a known number beyond the bound.
func hugeNumber(v cty.Value) bool {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return false
	}
	bf := v.AsBigFloat()
	if bf.IsInf() || bf.Sign() == 0 {
		return false
	}
	exp := bf.MantExp(nil)
	return exp > maxBinaryExponent || exp < -maxBinaryExponent
}

func numberRangeDiag(subject hcl.Range) *hcl.Diagnostic {
	return errorDiag(subject, "Number out of range",
		"This number is too large (or too close to zero) for a spec: numbers stay within ±1e1000.")
}

// checkNumbers reports the number literals of a parsed file that are out of
// range, in native syntax (an AST walk) or JSON syntax (a token scan, which
// also walks "${...}" templates in strings).
func checkNumbers(f *hcl.File) hcl.Diagnostics {
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		return checkSyntaxNumbers(body)
	}
	return checkJSONNumbers(f.Bytes, f.Body.MissingItemRange().Filename)
}

// checkSyntaxNumbers walks a native-syntax node for out-of-range literals.
func checkSyntaxNumbers(node hclsyntax.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if lit, ok := n.(*hclsyntax.LiteralValueExpr); ok && hugeNumber(lit.Val) {
			diags = append(diags, numberRangeDiag(lit.SrcRange))
		}
		return nil
	})
	return diags
}

// checkJSONNumbers scans JSON-syntax source for out-of-range numbers.
func checkJSONNumbers(src []byte, filename string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	at := func(offset int64) hcl.Range {
		p := posAt(src, int(offset))
		return hcl.Range{Filename: filename, Start: p, End: p}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return diags // the parser reports syntax errors
		}
		switch v := tok.(type) {
		case json.Number:
			if jsonNumberHuge(string(v)) {
				diags = append(diags, numberRangeDiag(at(off)))
			}
		case string:
			if strings.Contains(v, "${") {
				if expr, d := hclsyntax.ParseTemplate([]byte(v), filename, at(off).Start); !d.HasErrors() {
					if len(checkSyntaxNumbers(expr)) > 0 {
						diags = append(diags, numberRangeDiag(at(off)))
					}
				}
			}
		}
	}
}

// jsonNumberHuge bounds a JSON number by its digits and exponent, without
// converting it.
func jsonNumberHuge(s string) bool {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return true
		}
		mant, exp = s[:i], e
	}
	intDigits := len(strings.TrimLeft(strings.SplitN(strings.TrimPrefix(mant, "-"), ".", 2)[0], "0"))
	return intDigits-1+exp > 1000 || len(mant) > 2000
}

// posAt is the line and column of byte offset in src.
func posAt(src []byte, offset int) hcl.Pos {
	if offset > len(src) {
		offset = len(src)
	}
	for offset < len(src) && (src[offset] == ' ' || src[offset] == '\n' || src[offset] == '\t' || src[offset] == '\r' || src[offset] == ',' || src[offset] == ':') {
		offset++ // InputOffset is before the separator and white space
	}
	line := 1 + bytes.Count(src[:offset], []byte("\n"))
	col := offset - (bytes.LastIndexByte(src[:offset], '\n') + 1) + 1
	return hcl.Pos{Line: line, Column: col, Byte: offset}
}

// guardNumbers wraps a function that parses text into numbers (tonumber,
// jsondecode, parseint) so that an out-of-range result is an error.
func guardNumbers(f function.Function) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			for i, a := range args {
				if a.IsKnown() && !a.IsNull() && a.Type() == cty.String && jsonNumberTextHuge(a.AsString()) {
					return cty.NilVal, function.NewArgError(i, fmt.Errorf("numbers stay within ±1e1000"))
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			if containsHugeNumber(v) {
				return cty.NilVal, fmt.Errorf("the result holds a number beyond ±1e1000")
			}
			return v, nil
		},
	})
}

// jsonNumberTextHuge finds number-looking runs in s that would parse out of
// range (a long run of digits, or a long exponent), before they are parsed.
func jsonNumberTextHuge(s string) bool {
	if len(s) < 5 {
		return false
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits > 1000 {
				return true
			}
		case (c == 'e' || c == 'E') && i > 0:
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			k := j
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			if k-j > 3 {
				return true
			}
			digits = 0
		case c != '.' && c != '_':
			digits = 0
		}
	}
	return false
}

// numberText renders a number for a message without converting a huge one.
func numberText(bf *big.Float) string {
	if bf.IsInf() {
		return "infinity"
	}
	if exp := bf.MantExp(nil); exp > 200 || exp < -200 {
		return fmt.Sprintf("a number near 2^%d", exp)
	}
	return bf.Text('g', 20)
}
