package schemas

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions is the function table of the spec language (the cty standard
// library, named as in Terraform). It is built once per load; add a function by
// adding a line. Functions that can produce unbounded output from a short
// input (setproduct, unbounded format widths) are left out or guarded, so a
// spec cannot make the loader allocate without bound.
func functions() map[string]function.Function {
	fns := map[string]function.Function{
		// strings
		"chomp":      stdlib.ChompFunc,
		"format":     guardFormat(stdlib.FormatFunc),
		"formatlist": guardFormat(stdlib.FormatListFunc),
		"join":       stdlib.JoinFunc,
		"lower":      stdlib.LowerFunc,
		"indent":     guardIndent(stdlib.IndentFunc),
		"regex":      stdlib.RegexFunc,
		"regexall":   stdlib.RegexAllFunc,
		"replace":    stdlib.ReplaceFunc,
		"split":      stdlib.SplitFunc,
		"strlen":     stdlib.StrlenFunc,
		"substr":     stdlib.SubstrFunc,
		"title":      stdlib.TitleFunc,
		"trim":       stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"upper":      stdlib.UpperFunc,

		// collections
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"lookup":          stdlib.LookupFunc,
		"merge":           stdlib.MergeFunc,
		"range":           newRangeBudget().wrap(stdlib.RangeFunc),
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,

		// numbers
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": guardNumbers(stdlib.ParseIntFunc),

		// errors: can(regex(...)) in variable validations, try(a, b) for fallbacks
		"can": tryfunc.CanFunc,
		"try": tryfunc.TryFunc,

		// encoding and conversion
		"jsondecode": guardNumbers(stdlib.JSONDecodeFunc),
		"jsonencode": stdlib.JSONEncodeFunc,
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":   guardNumbers(stdlib.MakeToFunc(cty.Number)),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":   stdlib.MakeToFunc(cty.String),
	}
	for name, f := range fns {
		if name != "can" && name != "try" { // they take unevaluated expressions
			fns[name] = limitResult(f)
		}
	}
	return fns
}

// Evaluation budget. A spec is small: these bounds are far above what one
// needs, and far below what would make a load take seconds or gigabytes
// (nested for expressions over range(1024), or locals that double a string
// or list at every step).
const (
	// MaxRangeCall bounds the numbers one range() call makes (go-cty's own
	// bound, kept so that every spec means the same with any go-cty).
	MaxRangeCall = 1024
	// MaxRangeTotal bounds the numbers all range() calls of one load make.
	MaxRangeTotal = 10000
	// maxValueSize bounds a function result or local value: its string bytes
	// plus its elements.
	maxValueSize = 1 << 17
	// maxIndent bounds indent()'s spaces.
	maxIndent = 1000
)

// valueSize is the string bytes plus elements of v, counted up to just past
// limit (a hand-rolled walk: cty.Walk allocates a path per element).
func valueSize(v cty.Value, limit int) int {
	n := 0
	var walk func(v cty.Value) bool
	walk = func(v cty.Value) bool {
		n++
		v, _ = v.Unmark()
		if n > limit || !v.IsKnown() || v.IsNull() {
			return n <= limit
		}
		ty := v.Type()
		switch {
		case ty == cty.String:
			n += len(v.AsString())
		case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
			if n+v.LengthInt() > limit {
				n = limit + 1
				return false
			}
			for it := v.ElementIterator(); it.Next(); {
				if _, e := it.Element(); !walk(e) {
					return false
				}
			}
		}
		return n <= limit
	}
	walk(v)
	return n
}

// limitResult wraps f so that a result larger than maxValueSize is an error.
func limitResult(f function.Function) function.Function {
	return wrapImpl(f, func(args []cty.Value, call func() (cty.Value, error)) (cty.Value, error) {
		v, err := call()
		if err == nil && valueSize(v, maxValueSize) > maxValueSize {
			return cty.NilVal, fmt.Errorf("the result is too large for a spec (more than %d elements and characters)", maxValueSize)
		}
		return v, err
	})
}

// rangeBudget shares maxRangeTotal among the range() calls of one load.
type rangeBudget struct{ left int }

func newRangeBudget() *rangeBudget { return &rangeBudget{left: MaxRangeTotal} }

func (rb *rangeBudget) wrap(f function.Function) function.Function {
	return wrapImpl(f, func(args []cty.Value, call func() (cty.Value, error)) (cty.Value, error) {
		if rb.left < 0 {
			return cty.NilVal, fmt.Errorf("range() calls of this spec produce more than %d numbers in all", MaxRangeTotal)
		}
		if n, ok := rangeCount(args); ok && n.Cmp(big.NewFloat(MaxRangeCall)) > 0 {
			return cty.NilVal, fmt.Errorf("range() makes at most %d numbers in one call (and %d in all the calls of a spec); this call would make %s", MaxRangeCall, MaxRangeTotal, n.Text('g', 7))
		}
		v, err := call()
		if err != nil {
			return v, err
		}
		if v.IsKnown() && !v.IsNull() && v.CanIterateElements() {
			rb.left -= v.LengthInt()
		}
		if rb.left < 0 {
			return cty.NilVal, fmt.Errorf("range() calls of this spec produce more than %d numbers in all", MaxRangeTotal)
		}
		return v, nil
	})
}

// rangeCount is how many numbers range(args...) makes, as Terraform's range
// counts them (range(limit), range(start, limit), range(start, limit,
// step)); ok is false when the arguments are not known numbers.
func rangeCount(args []cty.Value) (*big.Float, bool) {
	nums := make([]*big.Float, 0, 3)
	for _, a := range args {
		a, _ = a.Unmark()
		if !a.IsKnown() || a.IsNull() || a.Type() != cty.Number {
			return nil, false
		}
		nums = append(nums, a.AsBigFloat())
	}
	start, limit, step := big.NewFloat(0), big.NewFloat(0), big.NewFloat(1)
	switch len(nums) {
	case 1:
		limit = nums[0]
	case 2:
		start, limit = nums[0], nums[1]
		if limit.Cmp(start) < 0 {
			step = big.NewFloat(-1)
		}
	case 3:
		start, limit, step = nums[0], nums[1], nums[2]
	default:
		return nil, false
	}
	if step.Sign() == 0 {
		return nil, false
	}
	n := new(big.Float).Quo(new(big.Float).Sub(limit, start), step)
	if n.Sign() <= 0 {
		return big.NewFloat(0), true
	}
	// Round up: range(0, 3, 2) makes 0 and 2.
	i, acc := n.Int(nil)
	out := new(big.Float).SetInt(i)
	if acc == big.Below {
		out.Add(out, big.NewFloat(1))
	}
	return out, true
}

// guardIndent bounds indent()'s number of spaces.
func guardIndent(f function.Function) function.Function {
	return wrapImpl(f, func(args []cty.Value, call func() (cty.Value, error)) (cty.Value, error) {
		if len(args) > 0 && args[0].IsKnown() && !args[0].IsNull() && args[0].Type() == cty.Number {
			if n := args[0].AsBigFloat(); n.Cmp(big.NewFloat(maxIndent)) > 0 {
				return cty.NilVal, function.NewArgError(0, fmt.Errorf("indent takes at most %d spaces", maxIndent))
			}
		}
		return call()
	})
}

// wrapImpl returns f with its implementation wrapped: around gets the
// arguments and a call of f.
func wrapImpl(f function.Function, around func(args []cty.Value, call func() (cty.Value, error)) (cty.Value, error)) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			return around(args, func() (cty.Value, error) { return f.Call(args) })
		},
	})
}

// maxFormatWidth bounds the width and precision of format verbs: stdlib pads
// to whatever width is asked, so "%999999999s" would allocate a gigabyte.
const maxFormatWidth = 1000

// guardFormat wraps format/formatlist so that a verb width or precision above
// maxFormatWidth is an error instead of an allocation.
func guardFormat(f function.Function) function.Function {
	spec := &function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			if len(args) > 0 && args[0].IsKnown() && !args[0].IsNull() && args[0].Type() == cty.String {
				if err := checkFormatWidths(args[0].AsString()); err != nil {
					return cty.NilVal, function.NewArgError(0, err)
				}
			}
			return f.Call(args)
		},
	}
	return function.New(spec)
}

// checkFormatWidths scans the verbs of a format string for numbers (widths,
// precisions, argument indexes) larger than maxFormatWidth.
func checkFormatWidths(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		i++
		if i < len(s) && s[i] == '%' {
			continue // literal %%
		}
		// Within a verb: flags, [n], width, .precision, then the verb letter.
		for i < len(s) {
			c := s[i]
			if c >= '0' && c <= '9' {
				j := i
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if n, err := strconv.Atoi(s[i:j]); err != nil || n > maxFormatWidth {
					return fmt.Errorf("format widths and precisions above %d are not supported", maxFormatWidth)
				}
				i = j
				continue
			}
			if c == '-' || c == '+' || c == '#' || c == ' ' || c == '.' || c == '[' || c == ']' {
				i++
				continue
			}
			break // the verb letter
		}
	}
	return nil
}
