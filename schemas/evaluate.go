package schemas

import (
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// newEvalContext builds the one context every expression of a load is
// evaluated in. Today it holds the function table and an empty variable
// scope; `var.*` and `local.*` go into Variables once the language has them.
func newEvalContext() *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{},
		Functions: functions(),
	}
}

// state says what evaluating an optional attribute gave.
type state int

const (
	// unset: the attribute is absent or null; the caller applies its default.
	unset state = iota
	// invalid: a diagnostic was recorded; the caller skips the value.
	invalid
	// set: the value is usable.
	set
)

// evaluator evaluates attribute expressions into Go values, recording
// diagnostics instead of returning them so building code reads straight.
type evaluator struct {
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

func (e *evaluator) errorf(subject hcl.Range, summary, format string, args ...any) {
	e.diags = append(e.diags, errorDiag(subject, summary, format, args...))
}

// value evaluates attr and converts it to ty. A null value counts as unset,
// as in Terraform: `x = null` is the same as leaving x out.
func (e *evaluator) value(attr *hcl.Attribute, ty cty.Type) (cty.Value, state) {
	if attr == nil {
		return cty.NilVal, unset
	}
	return e.exprValue(attr.Name, attr.Expr, ty)
}

func (e *evaluator) exprValue(name string, expr hcl.Expression, ty cty.Type) (cty.Value, state) {
	val, diags := expr.Value(e.ctx)
	refineDiagnostics(diags, e.ctx)
	e.diags = append(e.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, invalid
	}
	val, _ = val.UnmarkDeep()
	if val.IsNull() {
		return cty.NilVal, unset
	}
	if !val.IsWhollyKnown() {
		e.errorf(expr.Range(), "Value not known at load time",
			"The value of %s can only be known later, but the spec must be fully known when it is loaded. Use a literal value or one computed from literals.", name)
		return cty.NilVal, invalid
	}
	conv, err := convert.Convert(val, ty)
	if err != nil {
		e.errorf(expr.Range(), "Incorrect value type",
			"Inappropriate value for %s: %s Expected %s.", name, convertError(err), friendlyType(ty))
		return cty.NilVal, invalid
	}
	return conv, set
}

var (
	unknownFunctionRe = regexp.MustCompile(`^There is no function named "([^"]+)"\.`)
	unknownVariableRe = regexp.MustCompile(`^There is no variable named "([^"]+)"\.$`)
)

// refineDiagnostics improves HCL's evaluation diagnostics in place: HCL picks
// a "Did you mean" function from a map in random order, so the suggestion is
// recomputed deterministically, and a reference to a variable says that the
// language has none yet.
func refineDiagnostics(diags hcl.Diagnostics, ctx *hcl.EvalContext) {
	for _, d := range diags {
		switch d.Summary {
		case "Call to unknown function":
			m := unknownFunctionRe.FindStringSubmatch(d.Detail)
			if m == nil {
				continue
			}
			names := make([]string, 0, len(ctx.Functions))
			for name := range ctx.Functions {
				names = append(names, name)
			}
			sort.Strings(names)
			if s := didYouMeanSentence(m[1], names); s != "" {
				d.Detail = fmt.Sprintf("There is no function named %q.%s", m[1], s)
			} else {
				d.Detail = fmt.Sprintf("There is no function named %q. The spec language has: %s.", m[1], strings.Join(names, ", "))
			}
		case "Unknown variable":
			if len(ctx.Variables) == 0 && unknownVariableRe.MatchString(d.Detail) {
				d.Detail += " The spec language has no variables yet: write the value itself, in quotes if it is a string."
			}
		}
	}
}

// convertError renders a cty conversion error as a sentence.
func convertError(err error) string {
	msg := err.Error()
	if msg == "" {
		return "wrong type."
	}
	if msg[len(msg)-1] != '.' {
		msg += "."
	}
	return msg
}

func friendlyType(ty cty.Type) string {
	switch {
	case ty == cty.String:
		return "a string"
	case ty == cty.Number:
		return "a number"
	case ty.Equals(cty.List(cty.String)):
		return `a list of strings, such as ["sleep", "infinity"]`
	case ty.Equals(cty.Map(cty.String)):
		return `an object of strings, such as { key = "value" }`
	}
	return ty.FriendlyName()
}

// str evaluates attr as a string.
func (e *evaluator) str(attr *hcl.Attribute) (string, state) {
	v, st := e.value(attr, cty.String)
	if st != set {
		return "", st
	}
	return v.AsString(), set
}

// strList evaluates attr as a list of strings; an empty list is nil.
func (e *evaluator) strList(attr *hcl.Attribute) ([]string, state) {
	v, st := e.value(attr, cty.List(cty.String))
	if st != set {
		return nil, st
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			e.errorf(attr.Expr.Range(), "Invalid value",
				"Element %d of %s is null. Every element must be a string.", len(out), attr.Name)
			return nil, invalid
		}
		out = append(out, ev.AsString())
	}
	return out, set
}

// entry is one key = value pair of an object attribute, with both ranges so
// a diagnostic can point at the exact key or value.
type entry struct {
	Key, Value           string
	KeyRange, ValueRange hcl.Range
}

// strMap evaluates attr as an object (or map) of strings, keeping the pairs
// in source order. Written as an object literal, every key and value is
// evaluated on its own, for precise ranges; any other expression (a function
// call, later a variable) is evaluated whole and sorted by key.
func (e *evaluator) strMap(attr *hcl.Attribute) ([]entry, state) {
	if attr == nil {
		return nil, unset
	}
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		return e.strMapWhole(attr)
	}
	var out []entry
	seen := map[string]hcl.Range{}
	st := set
	for _, p := range pairs {
		k, kst := e.exprValue("a key of "+attr.Name, p.Key, cty.String)
		if kst == unset {
			e.errorf(p.Key.Range(), "Invalid key", "A key of %s is null. Keys must be strings.", attr.Name)
		}
		if kst != set {
			st = invalid
			continue
		}
		key := k.AsString()
		name := fmt.Sprintf("%s[%q]", attr.Name, key)
		v, vst := e.exprValue(name, p.Value, cty.String)
		if first, dup := seen[key]; dup {
			e.errorf(p.Key.Range(), "Duplicate key",
				"The key %q of %s was already set at %s. Set each key once.", key, attr.Name, pos(first))
			st = invalid
			continue
		}
		seen[key] = p.Key.Range()
		switch vst {
		case invalid:
			st = invalid
			continue
		case unset:
			e.errorf(p.Value.Range(), "Invalid value", "The value of %s is null. Set a string, or leave the key out.", name)
			st = invalid
			continue
		}
		out = append(out, entry{Key: key, Value: v.AsString(), KeyRange: p.Key.Range(), ValueRange: p.Value.Range()})
	}
	if st != set {
		return nil, st
	}
	return out, set
}

func (e *evaluator) strMapWhole(attr *hcl.Attribute) ([]entry, state) {
	v, st := e.value(attr, cty.Map(cty.String))
	if st != set {
		return nil, st
	}
	var out []entry
	rng := attr.Expr.Range()
	for it := v.ElementIterator(); it.Next(); { // cty iterates maps in key order
		k, ev := it.Element()
		if ev.IsNull() {
			e.errorf(rng, "Invalid value", "The value of %q in %s is null. Set a string, or leave the key out.", k.AsString(), attr.Name)
			return nil, invalid
		}
		out = append(out, entry{Key: k.AsString(), Value: ev.AsString(), KeyRange: rng, ValueRange: rng})
	}
	return out, set
}

// integer evaluates attr as a whole number within [min, max].
func (e *evaluator) integer(attr *hcl.Attribute, min, max int64) (int64, state) {
	v, st := e.value(attr, cty.Number)
	if st != set {
		return 0, st
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		e.errorf(attr.Expr.Range(), "Invalid value", "%s must be a whole number between %d and %d, not %s.", attr.Name, min, max, bf.Text('g', 10))
		return 0, invalid
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < min || i > max {
		e.errorf(attr.Expr.Range(), "Value out of range", "%s must be between %d and %d, not %s.", attr.Name, min, max, bf.Text('g', 20))
		return 0, invalid
	}
	return i, set
}

// required reports a missing required attribute attrName of block m (absent
// or null) and says how to set it. It returns st unchanged. When the block has
// a misspelling of attrName, the "Did you mean" of that is enough and nothing
// more is reported.
func (e *evaluator) required(st state, attr *hcl.Attribute, m blockMeta, attrName, what, example string) state {
	if st != unset {
		return st
	}
	if attr == nil && m.Misspelt[attrName] {
		return st
	}
	subject := m.DefRange
	if attr != nil {
		subject = attr.Expr.Range()
	}
	e.errorf(subject, "Missing required argument",
		"The %s block needs %s. Add it, for example: %s", m.what(), what, example)
	return st
}
