package schemas

import (
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Marks carried by cty values during evaluation.
type valueMark string

const (
	// sensitiveMark marks a value derived from a sensitive variable.
	sensitiveMark = valueMark("sensitive")
	// brokenMark marks the unknown value that stands for a variable or local
	// whose own evaluation failed, so that expressions using it fail silently
	// instead of repeating the error.
	brokenMark = valueMark("broken")
)

// brokenVal stands for a value whose evaluation already failed.
var brokenVal = cty.DynamicVal.Mark(brokenMark)

// newEvalContext builds the root context every expression of a load is
// evaluated in: the function table and the var, local scopes (filled by
// variables.go). Tenant for_each adds a child context holding each.
func newEvalContext() *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":   cty.EmptyObjectVal,
			"local": cty.EmptyObjectVal,
		},
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
	// declared names, for "Did you mean" on var.x and local.x.
	varNames, localNames []string
	// sensitive collects every string that is, or is part of, a sensitive
	// value: the model marks them, diagnostics are redacted of them.
	sensitive map[string]struct{}
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
	v, st, _ := e.exprValueWhole(name, expr, ty)
	return v, st
}

// exprValueWhole is exprValue, and whether the value is sensitive as a
// whole (not only some element of it): a map is, for one, when a key of
// its literal is built from a sensitive value, since HCL then marks the
// whole map.
func (e *evaluator) exprValueWhole(name string, expr hcl.Expression, ty cty.Type) (cty.Value, state, bool) {
	val, diags := expr.Value(e.ctx)
	e.refine(diags)
	e.diags = append(e.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, invalid, false
	}
	marked := val
	val, marks := val.UnmarkDeep()
	if _, broken := marks[brokenMark]; broken {
		return cty.NilVal, invalid, false
	}
	_, sensitive := marks[sensitiveMark]
	if val.IsNull() {
		return cty.NilVal, unset, false
	}
	if !val.IsWhollyKnown() {
		e.errorf(expr.Range(), "Value not known at load time",
			"The value of %s can only be known later, but the spec must be fully known when it is loaded. Use a literal value or one computed from literals.", name)
		return cty.NilVal, invalid, false
	}
	if containsHugeNumber(val) {
		e.diags = append(e.diags, numberRangeDiag(expr.Range()))
		return cty.NilVal, invalid, false
	}
	conv, err := convert.Convert(val, ty)
	if err != nil {
		e.errorf(expr.Range(), "Incorrect value type",
			"Inappropriate value for %s: %s Expected %s.", name, convertError(err), friendlyType(ty))
		return cty.NilVal, invalid, false
	}
	if sensitive {
		e.markSensitive(conv)
	}
	_, whole := marked.Marks()[sensitiveMark]
	return conv, set, whole
}

// containsHugeNumber reports whether v holds a number beyond the spec's
// bound (numbers.go), which converting to text would take too long on.
func containsHugeNumber(v cty.Value) bool {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	switch {
	case ty == cty.Number:
		return hugeNumber(v)
	case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); containsHugeNumber(e) {
				return true
			}
		}
	}
	return false
}

// markSensitive records every string in v as sensitive.
func (e *evaluator) markSensitive(v cty.Value) {
	if e.sensitive == nil {
		e.sensitive = map[string]struct{}{}
	}
	_ = cty.Walk(v, func(_ cty.Path, v cty.Value) (bool, error) {
		v, _ = v.Unmark()
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			if s := v.AsString(); s != "" {
				e.sensitive[s] = struct{}{}
			}
		}
		return true, nil
	})
}

// markSensitivePaths records the strings under every sensitive path of a
// value that still carries its marks (a variable or local).
func (e *evaluator) markSensitivePaths(v cty.Value) {
	unmarked, pvms := v.UnmarkDeepWithPaths()
	for _, pvm := range pvms {
		if _, ok := pvm.Marks[sensitiveMark]; !ok {
			continue
		}
		if sub, err := pvm.Path.Apply(unmarked); err == nil {
			e.markSensitive(sub)
		}
	}
}

// markLabelKeys records the keys of label entries (node labels, a node
// selector, pod labels) that came from a map sensitive as a whole. A key
// built from a sensitive value ("${lower(var.org)}/pool") is a string no
// variable holds as it is, so it must be recorded itself, or a label key
// made from a secret would pass for public. Written out in the argument,
// each key is evaluated on its own and marked like any value; a map built
// elsewhere (a local, merge()) carries one mark for all its keys, which
// then all count as sensitive: a label may not risk it. Other maps (env)
// keep their keys public: they name nothing Kubernetes lists.
func (e *evaluator) markLabelKeys(entries []entry) {
	for _, en := range entries {
		if en.SensitiveKey {
			e.markSensitive(cty.StringVal(en.Key))
		}
	}
}

var (
	unknownFunctionRe  = regexp.MustCompile(`^There is no function named "([^"]+)"\.`)
	unknownVariableRe  = regexp.MustCompile(`^There is no variable named "([^"]+)"\.$`)
	unsupportedAttrRe  = regexp.MustCompile(`^This object does not have an attribute named "([^"]+)"\.`)
	languageRootScopes = []string{"var", "local", "each"}
)

// refine improves HCL's evaluation diagnostics in place: HCL picks a "Did you
// mean" function from a map in random order, so the suggestion is recomputed
// deterministically; references to undeclared variables and locals name the
// declared ones; each outside for_each says where it belongs.
func (e *evaluator) refine(diags hcl.Diagnostics) {
	for _, d := range diags {
		switch d.Summary {
		case "Call to unknown function":
			m := unknownFunctionRe.FindStringSubmatch(d.Detail)
			if m == nil {
				continue
			}
			names := make([]string, 0, len(e.ctx.Functions))
			for c := e.ctx; c != nil; c = c.Parent() {
				for name := range c.Functions {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			if s := didYouMeanSentence(m[1], names); s != "" {
				d.Detail = fmt.Sprintf("There is no function named %q.%s", m[1], s)
			} else {
				d.Detail = fmt.Sprintf("There is no function named %q. The spec language has: %s.", m[1], strings.Join(names, ", "))
			}
		case "Unknown variable":
			m := unknownVariableRe.FindStringSubmatch(d.Detail)
			if m == nil {
				continue
			}
			if m[1] == "each" {
				d.Detail = "each.key and each.value only exist inside a tenant block that has for_each."
				continue
			}
			d.Detail = fmt.Sprintf("There is no variable named %q.%s References are var.<name> for a variable block, local.<name> for a locals value, and each.key or each.value inside a tenant with for_each.",
				m[1], didYouMeanSentence(m[1], languageRootScopes))
		case "Unsupported attribute":
			tr, ok := d.Expression.(*hclsyntax.ScopeTraversalExpr)
			m := unsupportedAttrRe.FindStringSubmatch(d.Detail)
			if !ok || m == nil || len(tr.Traversal) < 2 {
				continue
			}
			switch tr.Traversal.RootName() {
			case "var":
				d.Summary = "Reference to undeclared variable"
				hint := fmt.Sprintf("Declare it with a variable %q { type = string } block.", m[1])
				if len(e.varNames) > 0 {
					hint = fmt.Sprintf("Declared variables: %s. %s", quotedList(e.varNames), hint)
				}
				d.Detail = fmt.Sprintf("No variable %q is declared.%s %s", m[1], didYouMeanSentence(m[1], e.varNames), hint)
			case "local":
				d.Summary = "Reference to undeclared local value"
				hint := fmt.Sprintf("Declare it in a locals { %s = ... } block.", m[1])
				if len(e.localNames) > 0 {
					hint = fmt.Sprintf("Declared local values: %s. %s", quotedList(e.localNames), hint)
				}
				d.Detail = fmt.Sprintf("No local value %q is declared.%s %s", m[1], didYouMeanSentence(m[1], e.localNames), hint)
			case "each":
				d.Detail = fmt.Sprintf("each has no attribute %q.%s Use each.key or each.value.", m[1], didYouMeanSentence(m[1], []string{"key", "value"}))
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
	case ty == cty.Bool:
		return "true or false"
	case ty.Equals(cty.List(cty.String)):
		return `a list of strings, such as ["sleep", "infinity"]`
	case ty.Equals(cty.List(cty.Number)):
		return `a list of numbers, such as [443]`
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

// boolean evaluates attr as a bool.
func (e *evaluator) boolean(attr *hcl.Attribute) (bool, state) {
	v, st := e.value(attr, cty.Bool)
	if st != set {
		return false, st
	}
	return v.True(), set
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

// intList evaluates attr as a list of whole numbers within [min, max].
func (e *evaluator) intList(attr *hcl.Attribute, min, max int64) ([]int64, state) {
	v, st := e.value(attr, cty.List(cty.Number))
	if st != set {
		return nil, st
	}
	var out []int64
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			e.errorf(attr.Expr.Range(), "Invalid value", "Element %d of %s is null. Every element must be a number.", len(out), attr.Name)
			return nil, invalid
		}
		bf := ev.AsBigFloat()
		i, acc := bf.Int64()
		if !bf.IsInt() || acc != big.Exact || i < min || i > max {
			e.errorf(attr.Expr.Range(), "Value out of range", "Every element of %s must be a whole number between %d and %d, not %s.", attr.Name, min, max, numberText(bf))
			return nil, invalid
		}
		out = append(out, i)
	}
	return out, set
}

// entry is one key = value pair of an object attribute, with both ranges so
// a diagnostic can point at the exact key or value.
type entry struct {
	Key, Value           string
	KeyRange, ValueRange hcl.Range
	// SensitiveKey: the key comes from a map evaluated whole that is
	// sensitive as a whole, so the key may be made of a sensitive value
	// (markLabelKeys).
	SensitiveKey bool
}

// strMap evaluates attr as an object (or map) of strings, keeping the pairs
// in source order. Written as an object literal, every key and value is
// evaluated on its own, for precise ranges; any other expression (a function
// call, a variable) is evaluated whole and sorted by key.
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
	v, st, whole := e.exprValueWhole(attr.Name, attr.Expr, cty.Map(cty.String))
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
		out = append(out, entry{Key: k.AsString(), Value: ev.AsString(), KeyRange: rng, ValueRange: rng, SensitiveKey: whole})
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
		e.errorf(attr.Expr.Range(), "Invalid value", "%s must be a whole number between %d and %d, not %s.", attr.Name, min, max, numberText(bf))
		return 0, invalid
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < min || i > max {
		e.errorf(attr.Expr.Range(), "Value out of range", "%s must be between %d and %d, not %s.", attr.Name, min, max, numberText(bf))
		return 0, invalid
	}
	return i, set
}

// fraction evaluates attr as a number, whole or not, within [min, max].
func (e *evaluator) fraction(attr *hcl.Attribute, min, max float64) (float64, state) {
	v, st := e.value(attr, cty.Number)
	if st != set {
		return 0, st
	}
	bf := v.AsBigFloat()
	f, _ := bf.Float64()
	if bf.IsInf() || f < min || f > max {
		e.errorf(attr.Expr.Range(), "Value out of range", "%s must be between %s and %s, not %s.",
			attr.Name, strconv.FormatFloat(min, 'g', -1, 64), strconv.FormatFloat(max, 'g', -1, 64), numberText(bf))
		return 0, invalid
	}
	return f, set
}

// durationNone is the spelling of "no duration at all" where one is allowed.
const durationNone = "none"

// duration evaluates attr as a duration string ("10m", "1h30m", "2d") within
// [min, max]. With allowNone, "none" gives 0.
func (e *evaluator) duration(attr *hcl.Attribute, min, max time.Duration, allowNone bool) (time.Duration, state) {
	s, st := e.str(attr)
	if st != set {
		return 0, st
	}
	if allowNone && s == durationNone {
		return 0, set
	}
	d, err := parseDuration(s)
	if err != nil {
		alt := ""
		if allowNone {
			alt = `, or "none" for no limit at all`
		}
		e.errorf(attr.Expr.Range(), "Invalid duration",
			"%q is not a duration. Write a number and a unit (s, m, h, d), such as \"10m\", \"1h30m\" or \"2d\"%s.", s, alt)
		return 0, invalid
	}
	if d < min || d > max {
		e.errorf(attr.Expr.Range(), "Value out of range", "%s must be between %s and %s, not %s.", attr.Name, fmtDuration(min), fmtDuration(max), s)
		return 0, invalid
	}
	return d, set
}

var daysRe = regexp.MustCompile(`^([0-9]+)d(.*)$`)

// parseDuration is time.ParseDuration with a "d" (24h) unit in front.
func parseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if m := daysRe.FindStringSubmatch(s); m != nil {
		var n int64
		if _, err := fmt.Sscan(m[1], &n); err != nil || n > 10000 {
			return 0, fmt.Errorf("bad days")
		}
		days = time.Duration(n) * 24 * time.Hour
		if m[2] == "" {
			return days, nil
		}
		s = m[2]
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration")
	}
	return days + d, nil
}

// fmtDuration renders d the way a spec writes it ("10m", "24h").
func fmtDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if s == "" {
		return "0s"
	}
	return s
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
