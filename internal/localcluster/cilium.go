package localcluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/paddock-platform/paddock/internal/pins"
)

//go:embed crds/cilium-*.yaml
var ciliumCRDs embed.FS

// CiliumCRDs are the pinned Cilium policy CRDs the local cluster installs. No
// Cilium agent runs here: they make the real API server validate Paddock's
// CiliumNetworkPolicies against Cilium's own schema, nothing more.
func CiliumCRDs() ([]*unstructured.Unstructured, error) {
	raw, err := ciliumCRDs.ReadFile("crds/cilium-" + pins.Cilium + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("cilium %s CRDs are not embedded: run `go run ./internal/gen/cilium-crds`", pins.Cilium)
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
	// The API server warns about Cilium's own schemas (a string format it does
	// not know, a deprecated kind); they are the pinned release's, nothing a
	// user of `local up` can act on, so they are not printed.
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds, err := CiliumCRDs()
	if err != nil {
		return err
	}
	if c.state.real() {
		// The agent needs every Cilium CRD before it starts (in this release only
		// the operator, which does not run here, would register them).
		if crds, err = agentCRDs(ciliumShare(c.state.Binaries["cilium-agent"])); err != nil {
			return err
		}
	}
	force := true
	for _, u := range crds {
		if _, err := dc.Resource(crdGVR).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "paddock-local", Force: force}); err != nil {
			return fmt.Errorf("installing CRD %s: %w", u.GetName(), err)
		}
	}
	return c.waitCRDsServed(ctx, dc, crds)
}

// waitCRDsServed returns once every CRD among crds is Established and the API
// server lists its resource. An applied CRD is not served at once: `local up`
// returning before then let the first client of a policy kind get a 404.
func (c *cluster) waitCRDsServed(ctx context.Context, dc dynamic.Interface, crds []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for _, want := range crds {
		name := want.GetName()
		group, _, _ := unstructured.NestedString(want.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(want.Object, "spec", "names", "plural")
		version := servedStorageVersion(want)
		var last error
		for {
			got, err := dc.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err != nil:
				last = err
			case !crdEstablished(got):
				last = errors.New("not Established yet")
			default:
				gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
				if _, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
					last = err
				} else {
					last = nil
				}
			}
			if last == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s is not served after %s: %v", name, c.timeout, last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// servedStorageVersion is the version a CRD stores, the one surely served.
func servedStorageVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if ok && m["storage"] == true {
			name, _ := m["name"].(string)
			return name
		}
	}
	return ""
}

// agentCRDs reads every CRD the pinned Cilium build ships in share/crds.
func agentCRDs(share string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(share, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("the pinned Cilium build has no CRDs in %s: run `make tool-cilium`", filepath.Join(share, "crds"))
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 64*1024).Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}
