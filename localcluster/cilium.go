package localcluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/pins"
)

//go:embed crds/cilium-*.yaml
var ciliumCRDs embed.FS

// CiliumCRDs are the pinned Cilium policy CRDs the local cluster installs. No
// Cilium agent runs here: they make the real API server validate Paddock's
// CiliumNetworkPolicies against Cilium's own schema, nothing more.
func CiliumCRDs() ([]*unstructured.Unstructured, error) {
	raw, err := ciliumCRDs.ReadFile("crds/cilium-" + pins.Cilium + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("cilium %s CRDs are not embedded: run `go run ./hack/cilium-crds`", pins.Cilium)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 64*1024)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// installCiliumCRDs server-side applies the Cilium CRDs (idempotent).
func (c *cluster) installCiliumCRDs(ctx context.Context) error {
	cfg, err := restConfig(c.kubeconfig(), 30*time.Second)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds, err := CiliumCRDs()
	if err != nil {
		return err
	}
	force := true
	for _, u := range crds {
		if _, err := dc.Resource(crdGVR).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "paddock-local", Force: force}); err != nil {
			return fmt.Errorf("installing CRD %s: %w", u.GetName(), err)
		}
	}
	return nil
}
