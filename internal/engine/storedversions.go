package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// guardStoredVersions refuses, before anything is applied, a release whose CRDs
// no longer list a version the live CRD still keeps objects in
// (status.storedVersions). Kubernetes rejects such a CRD update, so without this
// check an Agent Sandbox upgrade (v0.5.x to v1.0.x drops v1alpha1) would stop
// halfway: some objects of the new release applied, the CRDs not.
func (e *Engine) guardStoredVersions(ctx context.Context, op string, p *model.Platform) error {
	c, err := e.liveClients(ctx, p)
	if errors.Is(err, converge.ErrNoKubeconfig) {
		return nil // the stack has not created its cluster yet: no CRD of an older release lives there
	}
	if err != nil {
		return err
	}
	// Only the release's CRDs matter: parse the release, not every tenant's
	// objects (up's fast path builds those itself).
	release, err := agentsandbox.Objects(p.AgentSandbox.Version, manifests.ReleaseOptions(p))
	if err != nil {
		return err
	}
	return checkStoredVersions(ctx, c.Dyn, op, p.AgentSandbox.Version, release)
}

// storedVersionConflict is one CRD the release would drop a stored version of.
type storedVersionConflict struct {
	crd, plural          string
	storage, liveStorage string // the release's storage version and the live CRD's
	stored, missing      []string
	listed               []string
}

// checkStoredVersions compares each CRD of release with the live one of the same
// name. A CRD not yet in the cluster, or one whose stored versions the release
// still lists (served or not: the API server reads stored objects through any
// listed version), is fine.
func checkStoredVersions(ctx context.Context, dyn dynamic.Interface, op, version string, release []*unstructured.Unstructured) error {
	var conflicts []storedVersionConflict
	for _, u := range release {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		live, err := dyn.Resource(converge.CRDResource).Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: reading CRD %s to check its stored versions: %w", op, u.GetName(), err)
		}
		stored, _, _ := unstructured.NestedStringSlice(live.Object, "status", "storedVersions")
		c := storedVersionConflict{crd: u.GetName(), stored: stored}
		c.plural, _, _ = unstructured.NestedString(u.Object, "spec", "names", "plural")
		c.liveStorage = storageVersion(live)
		c.storage = storageVersion(u)
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			c.listed = append(c.listed, name)
		}
		for _, s := range stored {
			if !slices.Contains(c.listed, s) {
				c.missing = append(c.missing, s)
			}
		}
		if len(c.missing) > 0 {
			conflicts = append(conflicts, c)
		}
	}
	if len(conflicts) == 0 {
		return nil
	}
	sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].crd < conflicts[j].crd })
	var b strings.Builder
	fmt.Fprintf(&b, "%s refused before applying anything: Agent Sandbox %s no longer lists versions the cluster still stores objects in, and Kubernetes rejects a CRD update that drops a stored version, so the upgrade would stop halfway:", op, version)
	for _, c := range conflicts {
		fmt.Fprintf(&b, "\n  - CRD %s: status.storedVersions is [%s]; %s lists [%s], not %s",
			c.crd, strings.Join(c.stored, " "), version, strings.Join(c.listed, " "), strings.Join(c.missing, ", "))
	}
	b.WriteString("\nMigrate the stored objects first, with the installed release still in place:")
	for _, c := range conflicts {
		if !slices.Contains(c.listed, c.liveStorage) {
			fmt.Fprintf(&b, "\n  CRD %s: the installed release stores %s, which %s does not list either; upgrade through a release that lists both %s and %s first", c.crd, c.liveStorage, version, c.liveStorage, c.storage)
			continue
		}
		fmt.Fprintf(&b, "\n  kubectl get %s.%s -A -o json | kubectl replace -f -   # rewrites every object at %s", c.plural, groupOf(c.crd), c.liveStorage)
		fmt.Fprintf(&b, "\n  kubectl patch crd %s --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[\"%s\"]}}'", c.crd, c.liveStorage)
	}
	fmt.Fprintf(&b, "\n(kube-storage-version-migrator does the same), then run %s again.", op)
	return errors.New(b.String())
}

// storageVersion is the version a CRD marks storage: true.
func storageVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if s, _ := m["storage"].(bool); s {
			name, _ := m["name"].(string)
			return name
		}
	}
	return ""
}

// groupOf is the API group of a CRD name (plural.group).
func groupOf(crd string) string {
	_, group, _ := strings.Cut(crd, ".")
	return group
}
