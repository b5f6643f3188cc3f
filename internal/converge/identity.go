package converge

import (
	"bytes"
	"encoding/json"
)

// Reading a checkpoint's resources by the few fields a caller needs (the
// direct destroy's plan, the stack's inventory), without decoding every
// input and output as maps: the decoder skips what no field names. A value
// of another shape than the field's (a secret where a name was, say) reads
// as absent, as type assertions on decoded maps read it.

// ObjectIdentity is a Kubernetes object's apiVersion, kind, name and
// namespace as a checkpoint records them in a resource's inputs or outputs,
// read without the rest of the object; a field of another shape than a
// string reads as "".
type ObjectIdentity struct {
	APIVersion lenientString              `json:"apiVersion"`
	Kind       lenientString              `json:"kind"`
	Metadata   lenientObject[objectNames] `json:"metadata"`
}

// Name is the object's metadata.name.
func (o ObjectIdentity) Name() string { return string(o.Metadata.v.Name) }

// Namespace is the object's metadata.namespace.
func (o ObjectIdentity) Namespace() string { return string(o.Metadata.v.Namespace) }

type objectNames struct {
	Name      lenientString `json:"name"`
	Namespace lenientString `json:"namespace"`
}

// lenientString is a JSON string, or "" for any other value.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &v) == nil {
		*s = lenientString(v)
	}
	return nil
}

// lenientObject is a JSON object read into T, or T's zero value for any
// other value.
type lenientObject[T any] struct{ v T }

func (o *lenientObject[T]) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) > 0 && b[0] == '{' {
		var v T
		if json.Unmarshal(b, &v) == nil {
			o.v = v
		}
	}
	return nil
}
