// Package render writes the platform's objects as plain YAML for GitOps (Argo CD,
// Flux, kustomize): one file per concept plus a kustomization.yaml, in a stable
// order. The objects are exactly those `paddock up` applies (manifests),
// less Pulumi's own pulumi.com/* annotations, which mean nothing to other tools.
package render

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// Header starts every file Paddock writes, so nobody edits it by hand.
const Header = "# Rendered by `paddock render` from the platform spec; edit the spec, not this file.\n"

// Clean returns a copy of u without Pulumi-only annotations.
func Clean(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	ann := c.GetAnnotations()
	for k := range ann {
		if strings.HasPrefix(k, "pulumi.com/") {
			delete(ann, k)
		}
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	} else {
		c.SetAnnotations(ann)
	}
	return c
}

// WriteYAML writes objs as one multi-document YAML stream.
func WriteYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		b, err := yaml.Marshal(Clean(u).Object)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

// Files renders the platform into file name -> content, kustomization.yaml
// included, and the API server's audit policy (manifests.AuditPolicyFile) for
// targets other than GKE.
func Files(p *model.Platform) (map[string][]byte, []string, error) {
	groups, err := manifests.Platform(p)
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{}
	var order []string
	for _, g := range groups {
		var b bytes.Buffer
		b.WriteString(Header)
		if err := WriteYAML(&b, g.Objects); err != nil {
			return nil, nil, err
		}
		name := g.Name + ".yaml"
		files[name] = b.Bytes()
		order = append(order, name)
	}
	var k bytes.Buffer
	k.WriteString(Header)
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, n := range order {
		fmt.Fprintf(&k, "  - %s\n", n)
	}
	files["kustomization.yaml"] = k.Bytes()
	order = append(order, "kustomization.yaml")
	// The API server's audit policy is its configuration, not an object to
	// apply: a file of its own beside the objects, outside the kustomization.
	// GKE records Cloud Audit Logs and takes no policy file.
	if p.Target.Kind != model.TargetGKE {
		b, err := manifests.AuditPolicyYAML()
		if err != nil {
			return nil, nil, err
		}
		files[manifests.AuditPolicyFile] = b
		order = append(order, manifests.AuditPolicyFile)
	}
	return files, order, nil
}

// ToDir writes the rendered files into dir, replacing files Paddock rendered
// before and leaving everything else alone. Each file is written to a temporary
// name and renamed, so a failure never leaves a half-written file. A file that
// holds a sensitive value (see Sensitive; callers decide whether to write
// those at all) is readable by its owner only.
func ToDir(p *model.Platform, dir string) ([]string, error) {
	files, order, err := Files(p)
	if err != nil {
		return nil, err
	}
	sensitive, err := Sensitive(p)
	if err != nil {
		return nil, err
	}
	private := map[string]bool{}
	for _, s := range sensitive {
		private[s.File] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range order {
		path := filepath.Join(dir, name)
		tmp := path + ".tmp"
		perm := os.FileMode(0o644)
		if private[name] {
			perm = 0o600
		}
		_ = os.Remove(tmp) // WriteFile keeps the mode of a file that exists
		if err := os.WriteFile(tmp, files[name], perm); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// All is every object in one stream, in apply order.
func All(p *model.Platform) ([]*unstructured.Unstructured, error) {
	groups, err := manifests.Platform(p)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, g := range groups {
		out = append(out, g.Objects...)
	}
	return out, nil
}
