package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/paddock-platform/paddock/internal/gen/reference/refdoc"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// The spec reference is read back from the JSON Schema `paddock schema`
// prints rather than from package schemas' unexported tree: that schema is the
// published form of the language, and reading it keeps the tree private. Its
// descriptions end with " Default: X." and " Policy: IDs." (jsonschema.go);
// those are split off again here.

type object = map[string]any

// block is one block type of the language, at one place in the tree.
type block struct {
	path    []string // "tenant", "template"
	labels  []string // an example label of each block of path ("" for none)
	doc     string
	rules   []string
	label   string // what the label must be ("" for an unlabelled block)
	repeats bool
	variant string // the target kind, for target's bodies
	attrs   []attr
	blocks  []*block
	// anyAttrs: arguments of any name (locals).
	anyAttrs bool
	// variants are the bodies of a block whose label picks its kind.
	variants []*block
}

// attr is one argument.
type attr struct {
	name, doc, def, typ string
	rules               []string
	limits              []string
	example             string // the value, HCL source
}

func (b *block) anchor() string {
	return strings.Join(b.pathWithVariant(), "-")
}

func (b *block) pathWithVariant() []string {
	if b.variant == "" {
		return b.path
	}
	return append(append([]string(nil), b.path...), b.variant)
}

func (b *block) title() string {
	t := strings.Join(b.path, ".")
	if b.variant != "" {
		t += ` "` + b.variant + `"`
	}
	return t
}

var (
	policyRe  = regexp.MustCompile(`\b(?:PDK|GCP)-\d{3}\b`)
	rangeRe   = regexp.MustCompile(`\(?\b(-?\d[\d.,]*[a-zA-Z]*) to (\d[\d.,]*[a-zA-Z]*\d?[a-zA-Z]*)\b\)?`)
	quotedRe  = regexp.MustCompile(`"([^"\s]+)"`)
	numericRe = regexp.MustCompile(`^-?\d+(\.\d+)?$`)
)

// splitDesc splits a schema description into its prose, default and rules.
func splitDesc(desc string) (doc, def string, rules []string) {
	if i := strings.LastIndex(desc, " Policy: "); i >= 0 || strings.HasPrefix(desc, "Policy: ") {
		if i < 0 {
			i = 0
		}
		rules = policyRe.FindAllString(desc[i:], -1)
		desc = desc[:i]
	}
	if i := strings.LastIndex(desc, " Default: "); i >= 0 {
		def = strings.TrimSuffix(desc[i+len(" Default: "):], ".")
		desc = desc[:i]
	}
	return strings.TrimSpace(desc), def, rules
}

func str(o object, k string) string { s, _ := o[k].(string); return s }

func strs(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// isBlock tells a block's schema from an argument's (jsonschema.go's shapes:
// a body has properties, a repeatable one is a oneOf, a labelled one maps
// labels to bodies).
func isBlock(o object) bool {
	if _, ok := o["properties"]; ok {
		return true
	}
	if _, ok := o["oneOf"]; ok {
		return true
	}
	_, ok := o["additionalProperties"].(object)
	return ok && str(o, "type") == "object" && o["anyOf"] == nil
}

// parseBlock reads the schema under a block type.
func parseBlock(path, labels []string, o object) *block {
	b := &block{path: path, labels: labels}
	b.doc, _, b.rules = splitDesc(str(o, "description"))
	body := o
	if one, ok := o["additionalProperties"].(object); ok && o["properties"] == nil {
		// Labelled: the label is a property name.
		b.label = labelRule(o)
		labels[len(labels)-1] = exampleLabel(b.label)
		body = one
		b.repeats = true
	} else if o["minProperties"] != nil {
		// One label picks the body (target).
		b.label = "one of " + codeList(sortedKeys(o["properties"].(object)))
		props := o["properties"].(object)
		for _, k := range sortedKeys(props) {
			v := parseBody(path, labels, props[k].(object))
			v.variant = k
			v.doc, _, v.rules = splitDesc(str(props[k].(object), "description"))
			b.variants = append(b.variants, v)
		}
		return b
	}
	if alts, ok := body["oneOf"].([]any); ok {
		b.repeats = true
		body = alts[0].(object)
	}
	inner := parseBody(path, labels, body)
	b.attrs, b.blocks, b.anyAttrs = inner.attrs, inner.blocks, inner.anyAttrs
	if b.doc == "" {
		b.doc, _, b.rules = splitDesc(str(body, "description"))
	}
	return b
}

// parseBody reads a block body: its arguments and nested blocks.
func parseBody(path, labels []string, o object) *block {
	b := &block{path: path, labels: labels}
	b.anyAttrs, _ = o["additionalProperties"].(bool)
	props, _ := o["properties"].(object)
	for _, k := range sortedKeys(props) {
		p := props[k].(object)
		if isBlock(p) {
			b.blocks = append(b.blocks, parseBlock(append(append([]string(nil), path...), k), append(append([]string(nil), labels...), ""), p))
			continue
		}
		a := attr{name: k}
		a.doc, a.def, a.rules = splitDesc(str(p, "description"))
		a.typ, a.limits = typeOf(p)
		a.limits = append(a.limits, docLimits(a.doc)...)
		b.attrs = append(b.attrs, a)
	}
	return b
}

func labelRule(o object) string {
	var parts []string
	if max, ok := o["maxProperties"].(float64); ok {
		parts = append(parts, fmt.Sprintf("at most %s blocks", thousands(int(max))))
	}
	pn, _ := o["propertyNames"].(object)
	switch {
	case pn == nil:
		return "any name, unique"
	case pn["enum"] != nil:
		return strings.Join(append([]string{"one of " + codeList(strs(pn["enum"]))}, parts...), "; ")
	case pn["maxLength"] != nil:
		parts = append([]string{fmt.Sprintf("a DNS label: lower-case letters, digits and `-`, at most %v characters", pn["maxLength"])}, parts...)
	case str(pn, "pattern") == `^[A-Za-z_][-A-Za-z0-9_]*$`:
		parts = append([]string{"an identifier: letters, digits, `_` and `-`, not starting with a digit"}, parts...)
	default:
		parts = append([]string{"matching `" + str(pn, "pattern") + "`"}, parts...)
	}
	return strings.Join(parts, "; ") + "; unique"
}

// typeOf names an argument's type from its schema (jsonschema.go's attrSchema)
// and the limits the schema itself states.
func typeOf(o object) (string, []string) {
	alt := o
	if any, ok := o["anyOf"].([]any); ok {
		alt = any[0].(object)
	}
	if e := strs(alt["enum"]); len(e) > 0 {
		return "string", []string{"one of " + codeList(e)}
	}
	examples := strs(o["examples"])
	switch t := alt["type"].(type) {
	case string:
		switch t {
		case "integer":
			return "whole number", nil
		case "number":
			return "number", nil
		case "boolean":
			return "bool", nil
		case "array":
			items, _ := alt["items"].(object)
			if e := strs(items["enum"]); len(e) > 0 {
				return "list of strings", []string{"each one of " + codeList(e)}
			}
			if str(items, "type") == "integer" {
				return "list of whole numbers", nil
			}
			return "list of strings", nil
		case "object":
			ap, _ := alt["additionalProperties"].(object)
			if _, ok := ap["type"].([]any); ok {
				return "map of quantities", nil
			}
			return "map of strings", nil
		case "string":
			switch {
			case contains(examples, "none"):
				// "none" is in every duration's examples, but only some
				// arguments take it: their descriptions say so.
				return "duration", []string{"a duration such as " + codeList(examples[:len(examples)-1])}
			case contains(examples, "list(string)"):
				return "type constraint", nil
			case len(examples) > 0:
				return "quantity", []string{"a Kubernetes quantity such as " + codeList(examples)}
			}
			return "string", nil
		}
	}
	return "any value", nil
}

// docLimits are the clauses of the prose that state a range ("0s to 10m";
// "0 builds a pool's whole deficit at once, else 1 to 60000"), whole, since
// the words around a range say what it bounds.
func docLimits(doc string) []string {
	var out []string
	for _, sentence := range strings.Split(doc, ". ") {
		for _, clause := range strings.Split(sentence, "; ") {
			if rangeRe.MatchString(clause) {
				out = append(out, strings.TrimSuffix(strings.TrimSpace(clause), "."))
			}
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func sortedKeys(o object) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func codeList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// exampleIndex maps an argument's path ("tenant.template.image", for target
// "target.gke.project") to the first value examples/ gives it, as written.
type exampleIndex map[string]string

// readExamples reads the example specs. examples/insecure is left out: its
// values are the ones policy refuses, no example to copy.
func readExamples(dir string) (exampleIndex, error) {
	idx := exampleIndex{}
	var files []string
	for _, d := range []string{"local", "kubeconfig", "team-platform", "gke-gvisor", "gke-kata"} {
		m, err := filepath.Glob(filepath.Join(dir, d, "*.hcl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, diags
		}
		idx.add(src, nil, file.Body.(*hclsyntax.Body))
	}
	return idx, nil
}

func (idx exampleIndex) add(src []byte, path []string, body *hclsyntax.Body) {
	names := make([]string, 0, len(body.Attributes))
	for n := range body.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := body.Attributes[n]
		text := string(a.Expr.Range().SliceBytes(src))
		// A value from a variable or local says nothing about what to write.
		if strings.Contains(text, "var.") || strings.Contains(text, "local.") || strings.Contains(text, "each.") || strings.Contains(text, "\n") {
			continue
		}
		key := strings.Join(append(append([]string(nil), path...), n), ".")
		if _, ok := idx[key]; !ok {
			idx[key] = text
		}
	}
	for _, b := range body.Blocks {
		p := append(append([]string(nil), path...), b.Type)
		idx.add(src, p, b.Body)
		if len(b.Labels) == 1 {
			// Bodies picked by their label (target "gke") are also found by it.
			idx.add(src, append(append([]string(nil), path...), b.Type, b.Labels[0]), b.Body)
		}
	}
}

// exampleValue is the value an argument's example shows: the examples'
// own, else its default, else one its description quotes, else a
// placeholder of its type.
func (a *attr) exampleValue(idx exampleIndex, path []string) string {
	if v, ok := idx[strings.Join(append(append([]string(nil), path...), a.name), ".")]; ok {
		return v
	}
	quote := strconv.Quote
	literal := a.def != "" && !strings.ContainsAny(a.def, " <$")
	switch a.typ {
	case "bool":
		if a.def != "" {
			return a.def
		}
		return "true"
	case "whole number", "number":
		if numericRe.MatchString(a.def) {
			return a.def
		}
		return "1"
	case "map of quantities":
		if strings.HasPrefix(a.def, "{") {
			return a.def
		}
		return `{ cpu = "250m", memory = "512Mi" }`
	case "map of strings":
		return `{ team = "research" }`
	case "list of whole numbers":
		return "[443]"
	case "list of strings":
		if strings.HasPrefix(a.def, "[") {
			return a.def
		}
		for _, l := range a.limits {
			if strings.HasPrefix(l, "each one of `") {
				return "[" + quote(strings.Split(l, "`")[1]) + "]"
			}
		}
		if m := quotedRe.FindStringSubmatch(a.doc); m != nil {
			return "[" + quote(m[1]) + "]"
		}
		return `["example"]`
	case "any value":
		return `toset(["team-a", "team-b"])`
	case "type constraint":
		return "string"
	}
	if literal {
		return quote(a.def)
	}
	if len(a.limits) > 0 && strings.HasPrefix(a.limits[0], "one of ") {
		return quote(strings.Trim(strings.Fields(strings.TrimPrefix(a.limits[0], "one of "))[0], "`,"))
	}
	if m := quotedRe.FindStringSubmatch(a.doc); m != nil {
		return quote(m[1])
	}
	return quote("<" + a.name + ">")
}

// renderSpec renders spec.md.
func renderSpec(examplesDir string) ([]byte, error) {
	raw, err := schemas.JSONSchema(func(id string) (string, bool) {
		if r, ok := policy.Lookup(id); ok {
			return r.Title, true
		}
		return "", false
	})
	if err != nil {
		return nil, err
	}
	var root object
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	idx, err := readExamples(examplesDir)
	if err != nil {
		return nil, err
	}
	top := parseBody(nil, nil, root)

	var w bytes.Buffer
	w.WriteString(refdoc.Header("Spec reference", "the spec language's schema (`paddock schema`, package schemas) and the specs in examples/"))
	w.WriteString("A spec is a directory of `.hcl` files (merged) or one file. Anything left out takes Paddock's hardened default; ")
	w.WriteString("an argument whose description says LOOSENS undoes a default, and the policy rule named beside it reports it (see [rules.md](rules.md)). ")
	w.WriteString("Any argument may be an expression: variables (`var.NAME`), locals (`local.NAME`), functions and string templates.\n\n")
	w.WriteString("The same schema is printed as JSON Schema by `paddock schema`, for editors.\n\n")

	var all []*block
	var walk func(b *block)
	walk = func(b *block) {
		all = append(all, b)
		for _, v := range b.variants {
			all = append(all, v)
			for _, c := range v.blocks {
				walk(c)
			}
		}
		for _, c := range b.blocks {
			walk(c)
		}
	}
	for _, b := range top.blocks {
		walk(b)
	}

	w.WriteString("## Blocks\n\n")
	for _, b := range all {
		depth := len(b.path) - 1
		if b.variant != "" {
			depth++
		}
		fmt.Fprintf(&w, "%s- [%s](#%s)\n", strings.Repeat("  ", depth), b.title(), b.anchor())
	}
	w.WriteString("- [Limits of a spec](#limits)\n\n")

	for _, b := range all {
		writeBlock(&w, b, idx)
	}

	w.WriteString("<a id=\"limits\"></a>\n\n## Limits of a spec\n\n")
	w.WriteString("The loader refuses anything beyond these, with a diagnostic at the argument:\n\n")
	for _, l := range schemas.Limits() {
		fmt.Fprintf(&w, "- %s\n", l)
	}
	return w.Bytes(), nil
}

func writeBlock(w *bytes.Buffer, b *block, idx exampleIndex) {
	fmt.Fprintf(w, "<a id=\"%s\"></a>\n\n## %s\n\n", b.anchor(), refdoc.Escape(b.title()))
	if b.doc != "" {
		fmt.Fprintf(w, "%s\n\n", refdoc.Escape(b.doc))
	}
	var facts [][2]string
	if len(b.path) > 1 {
		parent := &block{path: b.path[:len(b.path)-1]}
		facts = append(facts, [2]string{"Inside", fmt.Sprintf("[%s](#%s)", parent.title(), parent.anchor())})
	} else if b.variant != "" {
		facts = append(facts, [2]string{"Inside", "the top level of a spec, as `target \"" + b.variant + "\"`"})
	} else {
		facts = append(facts, [2]string{"Inside", "the top level of a spec"})
	}
	if b.label != "" {
		facts = append(facts, [2]string{"Label", b.label})
	}
	switch {
	case b.variant != "":
	case b.repeats && b.label != "":
		facts = append(facts, [2]string{"Repeats", "yes, one block per label"})
	case b.repeats:
		facts = append(facts, [2]string{"Repeats", "yes"})
	default:
		facts = append(facts, [2]string{"Repeats", "no, at most one"})
	}
	if len(b.rules) > 0 {
		facts = append(facts, [2]string{"Policy", ruleLinks(b.rules)})
	}
	var kids []string
	for _, v := range b.variants {
		kids = append(kids, fmt.Sprintf("[%s](#%s)", v.title(), v.anchor()))
	}
	for _, c := range b.blocks {
		kids = append(kids, fmt.Sprintf("[%s](#%s)", c.path[len(c.path)-1], c.anchor()))
	}
	if len(kids) > 0 {
		facts = append(facts, [2]string{"Blocks", strings.Join(kids, ", ")})
	}
	w.WriteString("| | |\n|---|---|\n")
	for _, f := range facts {
		fmt.Fprintf(w, "| %s | %s |\n", f[0], refdoc.Cell(f[1]))
	}
	w.WriteString("\n")
	if len(b.variants) > 0 {
		return // each kind has its own section
	}

	path := b.pathWithVariant()
	for i := range b.attrs {
		b.attrs[i].example = b.attrs[i].exampleValue(idx, path)
	}
	w.WriteString("```hcl\n")
	w.WriteString(b.exampleHCL())
	w.WriteString("```\n\n")
	if b.anyAttrs {
		w.WriteString("Arguments of any name: each is a value, referenced as `local.NAME`.\n\n")
	}
	if len(b.attrs) == 0 {
		return
	}
	w.WriteString("| argument | type | default | policy |\n|---|---|---|---|\n")
	for _, a := range b.attrs {
		def := a.def
		if def == "" {
			def = "—"
		}
		pol := ruleLinks(a.rules)
		if pol == "" {
			pol = "—"
		}
		fmt.Fprintf(w, "| [`%s`](#%s-%s) | %s | %s | %s |\n", a.name, b.anchor(), a.name, a.typ, refdoc.Cell(refdoc.Escape(def)), pol)
	}
	w.WriteString("\n")
	for _, a := range b.attrs {
		fmt.Fprintf(w, "<a id=\"%s-%s\"></a>\n\n### %s.%s\n\n", b.anchor(), a.name, refdoc.Escape(b.title()), a.name)
		if a.doc != "" {
			fmt.Fprintf(w, "%s\n\n", refdoc.Escape(a.doc))
		}
		fmt.Fprintf(w, "- Type: %s\n", a.typ)
		if a.def != "" {
			fmt.Fprintf(w, "- Default: %s\n", refdoc.Escape(a.def))
		} else {
			w.WriteString("- Default: none\n")
		}
		if len(a.limits) > 0 {
			fmt.Fprintf(w, "- Limits: %s\n", strings.Join(a.limits, "; "))
		}
		if len(a.rules) > 0 {
			fmt.Fprintf(w, "- Policy: %s\n", ruleLinks(a.rules))
		}
		fmt.Fprintf(w, "- Example: `%s = %s`\n\n", a.name, a.example)
	}
}

// exampleHCL is the block inside its parents, every argument set to its
// example value.
func (b *block) exampleHCL() string {
	var s strings.Builder
	for i, t := range b.path {
		s.WriteString(strings.Repeat("  ", i) + t)
		if i == len(b.path)-1 && b.variant != "" {
			s.WriteString(` "` + b.variant + `"`)
		} else if b.labels[i] != "" {
			s.WriteString(` "` + b.labels[i] + `"`)
		}
		s.WriteString(" {\n")
	}
	ind := strings.Repeat("  ", len(b.path))
	width := 0
	for _, a := range b.attrs {
		width = max(width, len(a.name))
	}
	for _, a := range b.attrs {
		fmt.Fprintf(&s, "%s%-*s = %s\n", ind, width, a.name, a.example)
	}
	if b.anyAttrs {
		fmt.Fprintf(&s, "%sregion = \"europe-west1\"\n", ind)
	}
	for i := len(b.path) - 1; i >= 0; i-- {
		s.WriteString(strings.Repeat("  ", i) + "}\n")
	}
	return s.String()
}

// exampleLabel is a label a block's label rule accepts.
func exampleLabel(rule string) string {
	if strings.HasPrefix(rule, "one of `") {
		return strings.Split(rule, "`")[1]
	}
	if strings.HasPrefix(rule, "an identifier") {
		return "region"
	}
	return "example"
}

// ruleLinks links rule IDs to their sections of rules.md.
func ruleLinks(ids []string) string {
	l := make([]string, len(ids))
	for i, id := range ids {
		title := ""
		if r, ok := policy.Lookup(id); ok {
			title = " (" + r.Title + ")"
		}
		l[i] = fmt.Sprintf("[%s](rules.md#%s)%s", id, strings.ToLower(id), refdoc.Escape(title))
	}
	return strings.Join(l, ", ")
}
