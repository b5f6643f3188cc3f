package schemas

import (
	"fmt"
	"strconv"

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
	return map[string]function.Function{
		// strings
		"chomp":      stdlib.ChompFunc,
		"format":     guardFormat(stdlib.FormatFunc),
		"formatlist": guardFormat(stdlib.FormatListFunc),
		"join":       stdlib.JoinFunc,
		"lower":      stdlib.LowerFunc,
		"regex":      stdlib.RegexFunc,
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
		"coalesce": stdlib.CoalesceFunc,
		"compact":  stdlib.CompactFunc,
		"concat":   stdlib.ConcatFunc,
		"contains": stdlib.ContainsFunc,
		"distinct": stdlib.DistinctFunc,
		"element":  stdlib.ElementFunc,
		"flatten":  stdlib.FlattenFunc,
		"keys":     stdlib.KeysFunc,
		"length":   stdlib.LengthFunc,
		"lookup":   stdlib.LookupFunc,
		"merge":    stdlib.MergeFunc,
		"range":    stdlib.RangeFunc,
		"reverse":  stdlib.ReverseListFunc,
		"slice":    stdlib.SliceFunc,
		"sort":     stdlib.SortFunc,
		"values":   stdlib.ValuesFunc,
		"zipmap":   stdlib.ZipmapFunc,

		// numbers
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,

		// encoding and conversion
		"jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":   stdlib.MakeToFunc(cty.String),
	}
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
