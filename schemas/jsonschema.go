package schemas

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// JSONSchemaID identifies the schema JSONSchema returns.
const JSONSchemaID = "https://paddock.dev/schemas/spec-v1.json"

// RuleTitle names a policy rule by ID from the rule registry (policy.Lookup):
// the schema's references to rules are generated from it, and a reference
// to a rule it does not know is an error, never a false cross-reference.
type RuleTitle func(id string) (title string, ok bool)

// JSONSchema returns a JSON Schema (draft 2020-12) of the spec language, for
// editors: it describes a spec written in HCL's JSON syntax (*.hcl.json) and
// carries every block's and argument's description, allowed values and
// default, generated from the same language tree the decoder uses, and the
// policy rules that judge each (by ID, with their titles from rules; nil
// names IDs only).
//
// In HCL's JSON syntax a block is an object under its type, keyed by its
// label when it has one; a block that may repeat may also be an array of
// bodies. Any argument may be a "${...}" template string instead of a literal.
func JSONSchema(rules RuleTitle) ([]byte, error) {
	g := &schemaGen{rules: rules}
	root := g.bodySchema(rootSpec)
	if g.err != nil {
		return nil, g.err
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = JSONSchemaID
	root["title"] = "Paddock platform spec"
	root["description"] = "A hardened AI-agent sandbox platform on Kubernetes. Anything left out takes Paddock's hardened default; arguments marked LOOSENS undo a default and are reported by policy. Limits: " + strings.Join(Limits(), " ")
	return json.MarshalIndent(root, "", "  ")
}

// schemaGen builds the schema, resolving rule references.
type schemaGen struct {
	rules RuleTitle
	err   error
}

// withRules is doc followed by the rules that judge it.
func (g *schemaGen) withRules(doc string, ids []string) string {
	if len(ids) == 0 {
		return doc
	}
	refs := make([]string, 0, len(ids))
	for _, id := range ids {
		ref := id
		if g.rules != nil {
			title, ok := g.rules(id)
			if !ok {
				if g.err == nil {
					g.err = fmt.Errorf("the spec reference names policy rule %s, which does not exist", id)
				}
				continue
			}
			ref += " (" + title + ")"
		}
		refs = append(refs, ref)
	}
	if doc != "" {
		doc += " "
	}
	return doc + "Policy: " + strings.Join(refs, ", ") + "."
}

type object = map[string]any

// bodySchema is the schema of a block body.
func (g *schemaGen) bodySchema(s *blockSpec) object {
	props := object{}
	for _, a := range s.Attrs {
		props[a.Name] = g.attrSchema(a)
	}
	for _, b := range s.Blocks {
		props[b.Type] = g.blockSchema(b)
	}
	o := object{"type": "object", "properties": props, "additionalProperties": s.AnyAttrs}
	if doc := g.withRules(s.Doc, s.Rules); doc != "" {
		o["description"] = doc
	}
	return o
}

// blockSchema is the schema of the value under a block type.
func (g *schemaGen) blockSchema(s *blockSpec) object {
	if s.Variants != nil {
		kinds := make([]string, 0, len(s.Variants))
		for k := range s.Variants {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		props := object{}
		for _, k := range kinds {
			props[k] = g.bodySchema(s.Variants[k])
		}
		return object{"type": "object", "description": g.withRules(s.Doc, s.Rules), "properties": props, "additionalProperties": false, "minProperties": 1, "maxProperties": 1}
	}
	body := g.bodySchema(s)
	one := body
	if s.Repeat {
		one = object{"oneOf": []any{body, object{"type": "array", "items": body}}}
	}
	if s.Label == "" {
		if doc := g.withRules(s.Doc, s.Rules); doc != "" {
			one["description"] = doc
		}
		return one
	}
	o := object{"type": "object", "description": g.withRules(s.Doc, s.Rules), "additionalProperties": one}
	if s.Type == blockTenant {
		o["maxProperties"] = MaxTenants
	}
	switch s.Name {
	case nameDNSLabel:
		o["propertyNames"] = object{"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": dnsLabelMaxLength}
	case nameIdentifier:
		o["propertyNames"] = object{"pattern": "^[A-Za-z_][-A-Za-z0-9_]*$"}
	case nameEnvVar:
		o["propertyNames"] = object{"pattern": envVarRe.String()}
	case nameEnum:
		o["propertyNames"] = object{"enum": s.Labels}
	}
	return o
}

// templateString is a "${...}" expression in HCL's JSON syntax.
var templateString = object{"type": "string", "pattern": `\$\{`}

func (g *schemaGen) attrSchema(a attrSpec) object {
	var o object
	switch a.Kind {
	case kString:
		o = object{"type": "string"}
		if len(a.Enum) > 0 {
			o = object{"anyOf": []any{object{"enum": a.Enum}, templateString}}
		}
	case kNumber:
		o = object{"anyOf": []any{object{"type": "integer"}, templateString}}
	case kFraction:
		o = object{"anyOf": []any{object{"type": "number"}, templateString}}
	case kBool:
		o = object{"anyOf": []any{object{"type": "boolean"}, templateString}}
	case kStringList:
		items := object{"type": "string"}
		if len(a.Enum) > 0 {
			items = object{"enum": a.Enum}
		}
		o = object{"anyOf": []any{object{"type": "array", "items": items}, templateString}}
	case kNumberList:
		o = object{"anyOf": []any{object{"type": "array", "items": object{"type": "integer"}}, templateString}}
	case kStringMap:
		o = object{"anyOf": []any{object{"type": "object", "additionalProperties": object{"type": "string"}}, templateString}}
	case kQuantity:
		o = object{"type": "string", "examples": []string{"250m", "1", "512Mi", "2Gi"}}
	case kQuantityMap:
		o = object{"anyOf": []any{object{"type": "object", "additionalProperties": object{"type": []string{"string", "number"}}}, templateString}}
	case kDuration:
		o = object{"type": "string", "examples": []string{"10m", "1h30m", "2d", durationNone}}
	case kAny:
		o = object{}
	case kType:
		o = object{"type": "string", "examples": []string{"string", "number", "bool", "list(string)", "map(string)"}}
	}
	desc := a.Doc
	if a.Default != "" {
		desc += " Default: " + a.Default + "."
	}
	o["description"] = g.withRules(desc, a.Rules)
	return o
}
