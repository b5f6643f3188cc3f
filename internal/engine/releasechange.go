package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
)

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// guardReleaseChange runs before anything is applied when the spec names
// another Agent Sandbox release than the installed one: it prints what the
// move changes and disrupts (agentsandbox.Change), and refuses a rollback that
// would strand objects the cluster stores, with the reason and the manual
// steps. The same release, or none installed yet, says nothing.
func (e *Engine) guardReleaseChange(ctx context.Context, op string, p *model.Platform) error {
	var dyn dynamic.Interface
	c, err := e.liveClients(ctx, p)
	switch {
	case err == nil:
		dyn = c.Dyn
	case !errors.Is(err, converge.ErrNoKubeconfig):
		return err
	}
	from := e.installedRelease(ctx, dyn, p)
	to := p.AgentSandbox.Version
	if from == "" || from == to {
		return nil
	}
	change, err := compareReleases(p, from)
	if err != nil {
		fmt.Fprintf(e.opts.Out, "paddock: the installed Agent Sandbox release is %s, which this paddock does not carry (it carries %s): no release change summary\n",
			from, strings.Join(pins.AgentSandboxReleases(), ", "))
		return nil
	}
	fmt.Fprint(e.opts.Out, change.Summary())
	if !agentsandbox.IsRollback(from, to) {
		return nil
	}
	return checkRollback(ctx, dyn, op, change)
}

// compareReleases compares the installed release from, rendered as the spec
// would have rendered it, with the spec's release.
func compareReleases(p *model.Platform, from string) (agentsandbox.Change, error) {
	to := p.AgentSandbox.Version
	toOpts := manifests.ReleaseOptions(p)
	toObjs, err := agentsandbox.Objects(to, toOpts)
	if err != nil {
		return agentsandbox.Change{}, err
	}
	fromOpts := toOpts
	if p.AgentSandbox.Image == pins.AgentSandboxImageOf(to) {
		// The image follows the release; an image the spec names is kept.
		fromOpts.Image = pins.AgentSandboxImageOf(from)
	}
	fromObjs, err := agentsandbox.Objects(from, fromOpts)
	if err != nil {
		return agentsandbox.Change{}, err
	}
	return agentsandbox.Compare(from, fromObjs, to, toObjs), nil
}

// installedRelease is the release the cluster runs: the version label of the
// controller Deployment, else (a release installed before the label) the
// version the stack's last update exported. "" when neither is known.
func (e *Engine) installedRelease(ctx context.Context, dyn dynamic.Interface, p *model.Platform) string {
	if dyn != nil {
		dep, err := dyn.Resource(deploymentGVR).Namespace(agentsandbox.Namespace).Get(ctx, agentsandbox.ControllerDeployment, metav1.GetOptions{})
		if err == nil {
			if v := dep.GetLabels()[agentsandbox.VersionLabel]; v != "" {
				return v
			}
		} else if apierrors.IsNotFound(err) {
			return "" // nothing installed: a first up, or after destroy
		}
	}
	return e.lastExportedRelease(p)
}

// lastExportedRelease reads the agentSandboxVersion output of the stack's last
// checkpoint, from whichever backend holds it (readStackState).
func (e *Engine) lastExportedRelease(p *model.Platform) string {
	data, _, err := e.readStackState(e.stackName(p))
	if err != nil || data == nil {
		return ""
	}
	cp, err := converge.ParseCheckpoint(data)
	if err != nil || cp.Checkpoint.Latest == nil {
		return ""
	}
	for _, r := range cp.Checkpoint.Latest.Resources {
		if r.Type == "pulumi:pulumi:Stack" {
			v, _ := r.Outputs["agentSandboxVersion"].(string)
			return v
		}
	}
	return ""
}

// checkRollback refuses a rollback whose risks the live cluster confirms: a
// CRD the older release lacks that still holds objects, a version it does not
// list or a storage version it does not use that status.storedVersions still
// records. Without a cluster to ask, every risk counts.
func checkRollback(ctx context.Context, dyn dynamic.Interface, op string, c agentsandbox.Change) error {
	var live []agentsandbox.Risk
	for _, r := range c.Forward {
		confirmed, err := riskIsLive(ctx, dyn, r)
		if err != nil {
			return fmt.Errorf("%s: checking whether going back to Agent Sandbox %s is safe: %w", op, c.To, err)
		}
		if confirmed {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s refused before applying anything: going back from Agent Sandbox %s to %s is not safe here:", op, c.From, c.To)
	for _, r := range live {
		fmt.Fprintf(&b, "\n  - %s", r.Reason(c.From, c.To))
	}
	fmt.Fprintf(&b, "\nEither keep %s (set agent_sandbox.version back to %q), or, with %s still installed:", c.From, c.From, c.From)
	for _, r := range live {
		for _, s := range r.Steps(c.From, c.To) {
			fmt.Fprintf(&b, "\n  %s", s)
		}
	}
	fmt.Fprintf(&b, "\nthen run %s again.", op)
	return errors.New(b.String())
}

func riskIsLive(ctx context.Context, dyn dynamic.Interface, r agentsandbox.Risk) (bool, error) {
	if dyn == nil {
		return true, nil
	}
	crd, err := dyn.Resource(converge.CRDResource).Get(ctx, r.CRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", r.CRD, err)
	}
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	switch r.Kind {
	case agentsandbox.RiskVersionRemoved, agentsandbox.RiskStorageChanged:
		return slices.Contains(stored, r.Version), nil
	case agentsandbox.RiskCRDRemoved:
		v := storageVersion(crd)
		list, err := dyn.Resource(schema.GroupVersionResource{Group: r.Group, Version: v, Resource: r.Plural}).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, fmt.Errorf("listing %s.%s: %w", r.Plural, r.Group, err)
		}
		return len(list.Items) > 0, nil
	}
	return true, nil
}
