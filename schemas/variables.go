package schemas

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// This file evaluates the language's inputs and named values: variable blocks
// (with values from the defaults, PADDOCK_VAR_<name>, vars files and -var, in
// rising precedence, as in Terraform) and locals. They only add var and local
// to the EvalContext; nothing else in the pipeline knows they exist.

// EnvVarPrefix prefixes environment variables that set spec variables:
// PADDOCK_VAR_project=my-project sets var.project.
const EnvVarPrefix = "PADDOCK_VAR_"

// varSource is one value given for a variable from outside the spec.
type varSource struct {
	// origin names the source in messages: "-var", "PADDOCK_VAR_x",
	// "prod.pvars.hcl:3".
	origin string
	// raw is a -var or environment value; expr a vars file value.
	raw  string
	expr hcl.Expression
	// rng is the vars file argument's range (nil for raw values).
	rng *hcl.Range
}

// inputs are the values given for variables, by name, lowest precedence first.
type inputs struct {
	values map[string][]varSource
	// undeclared are the names given, in order, with whether the name came from
	// the command line (an error) or a vars file (a warning).
	order []string
}

func (in *inputs) add(name string, s varSource) {
	if in.values == nil {
		in.values = map[string][]varSource{}
	}
	if _, ok := in.values[name]; !ok {
		in.order = append(in.order, name)
	}
	in.values[name] = append(in.values[name], s)
}

// variable is a declared variable being evaluated.
type variable struct {
	n         *node
	name      string
	ty        cty.Type
	defaults  *typeexpr.Defaults
	sensitive bool
	value     cty.Value
}

// variables evaluates every variable block against in and puts var into the
// root context.
func (b *builder) variables(vars []*node, in inputs) {
	declared := map[string]*variable{}
	for _, n := range vars {
		b.varNames = append(b.varNames, n.Label)
	}
	sort.Strings(b.varNames)

	obj := map[string]cty.Value{}
	for _, n := range vars {
		v := b.declareVariable(n)
		declared[v.name] = v
		obj[v.name] = v.value
	}
	// Values given from outside, in precedence order: the last one wins.
	for _, name := range in.order {
		v, ok := declared[name]
		if !ok {
			b.undeclared(name, in.values[name])
			continue
		}
		if isBroken(v.value) {
			continue // its declaration is broken; already reported
		}
		srcs := in.values[name]
		given := srcs[len(srcs)-1]
		if val, ok := b.inputValue(v, given); ok {
			v.value = val
			obj[name] = val
		} else {
			obj[name] = brokenVal
			v.value = brokenVal
		}
	}
	for _, n := range vars {
		v := declared[n.Label]
		if v == nil || isBroken(v.value) {
			continue
		}
		if v.value == cty.NilVal {
			b.errorf(n.DefRange, "No value for required variable",
				"Variable %q has no default, and no value was given. Set one with -var '%s=...', in a vars file (--var-file, or *.auto.pvars.hcl next to the spec), or in %s%s; or give the variable a default.",
				v.name, v.name, EnvVarPrefix, v.name)
			obj[v.name] = brokenVal
			continue
		}
		if !b.validateVariable(v, in.values[v.name]) {
			obj[v.name] = brokenVal
		}
	}
	for name, v := range obj {
		if v == cty.NilVal {
			obj[name] = brokenVal
		}
	}
	for _, v := range obj {
		b.markSensitivePaths(v)
	}
	b.ctx.Variables["var"] = cty.ObjectVal(obj)
}

// declareVariable evaluates a variable block's type, default and sensitive
// flag. Its value is the default (cty.NilVal when there is none), or brokenVal.
func (b *builder) declareVariable(n *node) *variable {
	v := &variable{n: n, name: n.Label, ty: cty.DynamicPseudoType}
	if a := n.attr(argType); a != nil {
		ty, defaults, diags := typeexpr.TypeConstraintWithDefaults(a.Expr)
		b.diags = append(b.diags, diags...)
		if diags.HasErrors() {
			v.value = brokenVal
			return v
		}
		v.ty, v.defaults = ty, defaults
	}
	if s, st := b.boolean(n.attr(argSensitive)); st == set {
		v.sensitive = s
	}
	b.str(n.attr(argDescription))
	if a := n.attr(argDefault); a != nil {
		// A default is a constant: functions, but no references.
		val, diags := a.Expr.Value(&hcl.EvalContext{Functions: b.ctx.Functions})
		b.diags = append(b.diags, diags...)
		if diags.HasErrors() {
			v.value = brokenVal
			return v
		}
		if !val.IsNull() {
			conv, err := b.convertVariable(v, val)
			if err != nil {
				b.errorf(a.Expr.Range(), "Invalid default value for variable",
					"The default of variable %q does not fit its type: %s", v.name, convertError(err))
				v.value = brokenVal
				return v
			}
			v.value = conv
		}
	}
	return v
}

// convertVariable applies the type's optional-attribute defaults, converts
// val to the variable's type and marks it when the variable is sensitive.
func (b *builder) convertVariable(v *variable, val cty.Value) (cty.Value, error) {
	if v.defaults != nil {
		val = v.defaults.Apply(val)
	}
	conv, err := convert.Convert(val, v.ty)
	if err != nil {
		return cty.NilVal, err
	}
	if v.sensitive {
		conv = conv.Mark(sensitiveMark)
	}
	return conv, nil
}

// inputValue evaluates a value given for v from outside the spec.
func (b *builder) inputValue(v *variable, s varSource) (cty.Value, bool) {
	var val cty.Value
	switch {
	case s.expr != nil:
		var diags hcl.Diagnostics
		val, diags = s.expr.Value(nil)
		if diags.HasErrors() {
			b.inputDiags(v, s, diags)
			return cty.NilVal, false
		}
	case v.ty == cty.String || v.ty == cty.DynamicPseudoType:
		// As in Terraform: a string (or untyped) variable takes the raw text.
		val = cty.StringVal(s.raw)
	default:
		var expr hclsyntax.Expression
		var diags hcl.Diagnostics
		switch {
		case len(s.raw) > MaxSpecFileSize:
			diags = hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Variable value too large",
				Detail: fmt.Sprintf("The value is larger than %d MiB, the most Paddock reads for one variable.", MaxSpecFileSize>>20)}}
		default:
			if d := checkNesting([]byte(s.raw), s.origin, hcl.InitialPos, modeExpression); d != nil {
				d.Subject = nil // the range is in the value, not in a file
				diags = hcl.Diagnostics{d}
			} else {
				expr, diags = hclsyntax.ParseExpression([]byte(s.raw), s.origin, hcl.InitialPos)
			}
		}
		if !diags.HasErrors() {
			diags = checkSyntaxNumbers(expr)
		}
		if !diags.HasErrors() {
			val, diags = expr.Value(nil)
		}
		if diags.HasErrors() {
			b.inputDiags(v, s, diags)
			return cty.NilVal, false
		}
	}
	if val.IsNull() {
		return v.value, true // null: as if not given
	}
	conv, err := b.convertVariable(v, val)
	if err != nil {
		d := &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("The value of variable %q given by %s does not fit its type %s: %s", v.name, s.origin, typeexpr.TypeString(v.ty), convertError(err)),
		}
		b.placeInput(v, s, d)
		b.diags = append(b.diags, d)
		return cty.NilVal, false
	}
	return conv, true
}

// inputDiags reports evaluation errors of an outside value. A sensitive
// variable's value is never shown: the diagnostics move to its declaration.
func (b *builder) inputDiags(v *variable, s varSource, diags hcl.Diagnostics) {
	hint := ""
	if s.expr == nil {
		hint = fmt.Sprintf(" Its type is %s, so the value is read as an HCL expression: write a number or bool bare (3, true), and quote strings inside lists and maps (-var '%s=[\"a\"]').", typeexpr.TypeString(v.ty), v.name)
	}
	for _, d := range diags {
		d.Detail = strings.TrimSpace(fmt.Sprintf("%s (In the value of variable %q given by %s.%s)", d.Detail, v.name, s.origin, hint))
		b.placeInput(v, s, d)
		b.diags = append(b.diags, d)
	}
}

// placeInput points d at the vars file argument, or at the variable's
// declaration when the value is sensitive or came from -var or the
// environment (which have no file).
func (b *builder) placeInput(v *variable, s varSource, d *hcl.Diagnostic) {
	d.Expression, d.EvalContext = nil, nil
	switch {
	case s.rng != nil && !v.sensitive:
		d.Subject = s.rng.Ptr()
	default:
		d.Subject = v.n.DefRange.Ptr()
	}
}

// undeclared reports values given for a variable no block declares: an error
// for -var and the environment is ignored (PADDOCK_VAR_* of other specs), a
// warning for vars files, which are often shared.
func (b *builder) undeclared(name string, srcs []varSource) {
	hint := didYouMeanSentence(name, b.varNames)
	if len(b.varNames) > 0 {
		hint += fmt.Sprintf(" Declared variables: %s.", quotedList(b.varNames))
	} else {
		hint += " The spec declares no variables."
	}
	for _, s := range srcs {
		switch {
		case s.rng != nil:
			b.diags = append(b.diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("%s sets variable %q, which the spec does not declare; the value is ignored.%s", s.origin, name, hint),
				Subject:  s.rng.Ptr(),
			})
		case strings.HasPrefix(s.origin, EnvVarPrefix):
			// Ignored, as in Terraform: the environment may serve many specs.
		default:
			b.diags = append(b.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("A value was given for variable %q by %s, but the spec declares no such variable.%s Declare it with a variable %q {} block, or remove the option.", name, s.origin, hint, name),
			})
		}
	}
}

// validateVariable checks v's validation blocks. Only var.<name> itself is in
// scope, as in Terraform.
func (b *builder) validateVariable(v *variable, srcs []varSource) bool {
	ok := true
	for _, vn := range v.n.all(blockValidation) {
		cond := vn.attr(argCondition)
		msgAttr := vn.attr(argErrorMessage)
		b.required(unsetIfNil(cond), cond, vn.blockMeta, "condition", "a condition", fmt.Sprintf("condition = length(var.%s) > 0", v.name))
		b.required(unsetIfNil(msgAttr), msgAttr, vn.blockMeta, "error_message", "an error message", `error_message = "Say what a valid value looks like."`)
		if cond == nil {
			continue
		}
		refOK := true
		for _, tr := range cond.Expr.Variables() {
			if tr.RootName() != "var" || len(tr) < 2 {
				b.errorf(tr.SourceRange(), "Invalid reference in variable validation",
					"The condition of variable %q may only refer to var.%s.", v.name, v.name)
				refOK = false
				continue
			}
			if a, isAttr := tr[1].(hcl.TraverseAttr); !isAttr || a.Name != v.name {
				b.errorf(tr.SourceRange(), "Invalid reference in variable validation",
					"The condition of variable %q may only refer to var.%s.", v.name, v.name)
				refOK = false
			}
		}
		if !refOK {
			ok = false
			continue
		}
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.name: v.value})},
			Functions: b.ctx.Functions,
		}
		res, diags := cond.Expr.Value(ctx)
		if diags.HasErrors() {
			for _, d := range diags {
				d.EvalContext = nil // never carry the value along
			}
			b.diags = append(b.diags, diags...)
			ok = false
			continue
		}
		res, _ = res.UnmarkDeep()
		if conv, err := convert.Convert(res, cty.Bool); err != nil || conv.IsNull() || !conv.IsKnown() {
			b.errorf(cond.Expr.Range(), "Invalid validation condition",
				"The condition of variable %q must give true or false.", v.name)
			ok = false
			continue
		} else if conv.True() {
			continue
		}
		msg := "The value does not meet this validation rule."
		if msgAttr != nil {
			mv, diags := msgAttr.Expr.Value(ctx)
			b.diags = append(b.diags, diags...)
			mv, marks := mv.UnmarkDeep()
			_, secret := marks[sensitiveMark]
			switch {
			case diags.HasErrors():
			case secret:
				msg = "(The error message is hidden: it includes the sensitive value.)"
			case !mv.IsNull() && mv.IsKnown() && mv.Type() == cty.String:
				msg = mv.AsString()
			}
		}
		subject := cond.Expr.Range()
		origin := "its default"
		if len(srcs) > 0 {
			s := srcs[len(srcs)-1]
			origin = s.origin
			if s.rng != nil && !v.sensitive {
				subject = *s.rng
			}
		}
		b.errorf(subject, "Invalid value for variable",
			"%s\n\nThe value of variable %q given by %s fails the validation rule at %s.", msg, v.name, origin, pos(cond.Expr.Range()))
		ok = false
	}
	return ok
}

// isBroken reports whether v stands for a value whose evaluation failed.
func isBroken(v cty.Value) bool { return v != cty.NilVal && v.HasMark(brokenMark) }

func unsetIfNil(a *hcl.Attribute) state {
	if a == nil {
		return unset
	}
	return set
}

// locals evaluates the locals in dependency order and puts local into the
// root context. A cycle is reported once, at the member where it closes.
func (b *builder) locals(attrs map[string]*hcl.Attribute, order []string) {
	b.localNames = append([]string(nil), order...)
	sort.Strings(b.localNames)
	values := map[string]cty.Value{}
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var visit func(name string, path []string)
	visit = func(name string, path []string) {
		a, ok := attrs[name]
		if !ok || mark[name] == done {
			return
		}
		if mark[name] == visiting {
			cycle := append(path[indexOf(path, name):], name)
			b.errorf(a.NameRange, "Cycle in local values",
				"The local values %s refer to each other in a cycle. Break it by computing one of them from the others' inputs.",
				strings.Join(prefixAll("local.", cycle), " → "))
			values[name] = brokenVal
			mark[name] = done
			return
		}
		mark[name] = visiting
		// The expression sees the locals it names, not all of them: building
		// the object of every local for every local made a spec of a few
		// thousand locals take minutes.
		deps, whole := map[string]cty.Value{}, false
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() != "local" {
				continue
			}
			dep, ok := hcl.TraverseAttr{}, len(tr) >= 2
			if ok {
				dep, ok = tr[1].(hcl.TraverseAttr)
			}
			if !ok {
				whole = true // local itself, or local["name"]: every local
				continue
			}
			visit(dep.Name, append(path, name))
			if v, ok := values[dep.Name]; ok {
				deps[dep.Name] = v
			}
		}
		if mark[name] == done { // set by a cycle through it
			return
		}
		if whole {
			deps = values
		}
		b.ctx.Variables["local"] = cty.ObjectVal(deps)
		val, diags := a.Expr.Value(b.ctx)
		b.refine(diags)
		b.diags = append(b.diags, diags...)
		if diags.HasErrors() {
			val = brokenVal
		} else if valueSize(val, maxValueSize) > maxValueSize {
			b.errorf(a.Expr.Range(), "Local value too large",
				"local.%s holds more than %d elements and characters, far more than a spec needs.", name, maxValueSize)
			val = brokenVal
		}
		values[name] = val
		mark[name] = done
	}
	for _, name := range order {
		visit(name, nil)
	}
	for _, v := range values {
		b.markSensitivePaths(v)
	}
	b.ctx.Variables["local"] = cty.ObjectVal(values)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return 0
}

func prefixAll(prefix string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = prefix + s
	}
	return out
}

// sortByStart orders names by where their attribute starts.
func sortByStart(names []string, attrs hcl.Attributes) {
	sort.Slice(names, func(i, j int) bool {
		a, c := attrs[names[i]].Range, attrs[names[j]].Range
		if a.Filename != c.Filename {
			return a.Filename < c.Filename
		}
		return a.Start.Byte < c.Start.Byte
	})
}
