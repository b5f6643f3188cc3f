package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
	"github.com/paddock-platform/paddock/internal/model"
)

// guardMonitoringCRDs refuses, before anything is applied, a spec whose
// observability block asks for a ServiceMonitor or PrometheusRule on a
// cluster that does not serve them: the apply would otherwise fail on those
// objects after everything else had changed.
func (e *Engine) guardMonitoringCRDs(ctx context.Context, op string, p *model.Platform) error {
	if !p.WantsServiceMonitor() && !p.WantsPrometheusRule() {
		return nil
	}
	c, err := e.liveClients(ctx, p)
	if errors.Is(err, converge.ErrNoKubeconfig) {
		// The program creates the cluster, so nothing can be read before it
		// runs; a fresh GKE cluster has no Prometheus Operator.
		fmt.Fprintf(e.opts.Out, "paddock %s: the observability block's objects need the Prometheus Operator CRDs (%s), which cannot be checked before the program creates the cluster\n",
			op, strings.Join(promoperator.CRDs(), ", "))
		return nil
	}
	if err != nil {
		return err
	}
	return checkMonitoringCRDs(ctx, c.Dyn, op, p)
}

// checkMonitoringCRDs names every CRD the requested objects need that the
// cluster lacks (or that does not serve monitoring.coreos.com/v1).
func checkMonitoringCRDs(ctx context.Context, dyn dynamic.Interface, op string, p *model.Platform) error {
	var need []string
	if p.WantsServiceMonitor() {
		need = append(need, promoperator.ServiceMonitors.GroupResource().String())
	}
	if p.WantsPrometheusRule() {
		need = append(need, promoperator.PrometheusRules.GroupResource().String())
	}
	var missing []string
	for _, name := range need {
		live, err := dyn.Resource(converge.CRDResource).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return fmt.Errorf("%s: reading CRD %s for the observability block: %w", op, name, err)
		case !servesVersion(live, promoperator.GroupVersion.Version):
			missing = append(missing, name+" (installed, but not serving "+promoperator.GroupVersion.Version+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	where := "the spec's observability block"
	if o := p.Observability; o != nil && o.Src.Known() {
		where += " (" + o.Src.String() + ")"
	}
	return fmt.Errorf("%s refused before applying anything: %s asks for Prometheus Operator objects, but the cluster lacks the CRD(s) %s.\n"+
		"Install the Prometheus Operator first (for example the kube-prometheus-stack Helm chart, or the operator's bundle.yaml), "+
		"or turn the objects off: remove the observability block, or set service_monitor = false and prometheus_rule = false.",
		op, where, strings.Join(missing, ", "))
}

// servesVersion reports whether a CRD serves version.
func servesVersion(crd *unstructured.Unstructured, version string) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served && m["name"] == version {
			return true
		}
	}
	return false
}
