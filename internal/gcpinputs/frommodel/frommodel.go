// Package frommodel maps a platform model of target "gke" onto the inputs of
// Paddock's GCP layer (gcpinputs.PlatformArgs), and a violation of the GCP layer's
// rules back to the spec argument it is about.
//
// It is pure: no Pulumi, no HCL. The program passes Args to gcp.NewPlatform;
// policy runs rules.Validate on the very same Args before anything is applied
// and reports each violation at Source, so a spec GKE would refuse is refused
// with a file:line:col, not by a late Pulumi error. (It is a package of its own,
// not part of package program, because policy must reach it without Pulumi.)
package frommodel

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/rules"
	"github.com/paddock-platform/paddock/internal/model"
)

// Args are the GCP layer's inputs for p (target "gke"): the cluster of the
// target and cluster blocks, the node pools, Kata for the Kata runtime
// classes, one workload identity per tenant identity that asks for cloud
// access, and the audit sinks scoped to the tenants' namespaces. Unset values
// stay zero, so the GCP layer's hardened defaults apply (gcpinputs.WithDefaults).
func Args(p *model.Platform) gcpinputs.PlatformArgs {
	a := gcpinputs.PlatformArgs{
		Name: p.Name,
		Cluster: gcpinputs.ClusterArgs{
			Project:  p.Target.Project,
			Location: p.Target.Location,
			Name:     p.Target.ClusterName,
		},
	}
	if c := p.Cluster; c != nil {
		a.Cluster.ReleaseChannel = strings.ToUpper(c.ReleaseChannel)
		for _, cidr := range c.AuthorizedNetworks {
			a.Cluster.AuthorizedNetworks = append(a.Cluster.AuthorizedNetworks, gcpinputs.AuthorizedNetwork{CIDR: cidr})
		}
		a.Cluster.PublicNodes = c.PublicNodes
		a.Cluster.DisableDataplaneV2 = c.NoDataplaneV2
		a.Cluster.DisableWorkloadIdentity = c.NoWorkloadIdentity
		a.Cluster.AllowDeletion = c.AllowDeletion
		// Explicit, never derived from the tenants: GKE replaces the cluster
		// when the flag goes off, so removing the last tenant's fqdns must not
		// turn it off.
		a.Cluster.FQDNNetworkPolicy = c.FQDNNetworkPolicy
	}
	var namespaces []string
	for _, t := range p.Tenants {
		namespaces = append(namespaces, t.Namespace)
		// The in-cluster layer applies a GKE FQDNNetworkPolicy for every tenant
		// with an allow-list (manifests.FQDNPolicy): the cluster must
		// serve them (GCP-018).
		if len(t.Egress.FQDNs) > 0 && !t.Egress.Unrestricted {
			a.FQDNNamespaces = append(a.FQDNNamespaces, t.Namespace)
		}
	}
	sort.Strings(namespaces)

	for _, np := range p.NodePools {
		a.NodePools = append(a.NodePools, nodePool(np))
	}

	// What the nodes pull: every template's image and the Agent Sandbox
	// controller's (pinned by digest as manifests.ReleaseOptions
	// does). The node service account may read the Artifact Registry
	// repositories among them.
	for _, t := range p.Tenants {
		for _, tpl := range t.Templates {
			a.Images = append(a.Images, tpl.Image)
		}
	}
	controller := p.AgentSandbox.Image
	if d := p.AgentSandbox.Digest; d != "" && !strings.Contains(controller, "@") {
		controller += "@" + d
	}
	a.Images = append(a.Images, controller)

	// The spec's Kata runtime classes name the shims kata-deploy installs;
	// the in-cluster layer creates exactly those RuntimeClasses.
	for _, e := range kataShims(p) {
		a.Kata.Shims = append(a.Kata.Shims, e.shim)
	}
	a.Kata.ExternalRuntimeClasses = len(a.Kata.Shims) > 0

	for _, t := range p.Tenants {
		for _, wi := range t.Identity.WorkloadIdentities {
			a.WorkloadIdentities = append(a.WorkloadIdentities, gcpinputs.WorkloadIdentityArgs{
				Platform:  p.Name,
				Tenant:    t.Name,
				Namespace: t.Namespace,
				KSA:       wi.ServiceAccount,
				Roles:     append([]string(nil), wi.Roles...),
			})
		}
	}

	for _, s := range p.AuditSinks {
		project, dest := model.ParseAuditDestination(s.Kind, s.Destination)
		a.AuditSinks = append(a.AuditSinks, gcpinputs.AuditSinkArgs{
			Project:     project, // "" = the cluster's
			Name:        SinkName(p, s),
			Kind:        s.Kind,
			Destination: dest,
			Filter: gcpinputs.AuditFilterArgs{
				Namespaces: append([]string(nil), namespaces...),
				Events:     append([]string(nil), s.Filters...),
			},
		})
	}
	a.Alerts = alerts(p, namespaces)
	return a
}

// alerts are the Cloud Monitoring counterparts of the observability block's
// PrometheusRule, from what GKE records without anything installed: a tenant
// ResourceQuota refusing a request, and a sandbox container running longer
// than lifetime_factor × the longest max_ttl (container uptime counts a warm
// sandbox's time in the pool too, so the longest bound is the only safe one).
// None without the block.
func alerts(p *model.Platform, namespaces []string) *gcpinputs.AlertArgs {
	o := p.Observability
	if o == nil {
		return nil
	}
	var longest time.Duration
	for _, t := range p.Tenants {
		if t.Claims.MaxTTL == 0 {
			longest = 0 // a tenant without a maximum: no lifetime bound holds
			break
		}
		longest = max(longest, t.Claims.MaxTTL)
	}
	return &gcpinputs.AlertArgs{
		Namespaces:         append([]string(nil), namespaces...),
		QuotaSaturation:    true,
		SandboxMaxLifetime: time.Duration(o.LifetimeFactor * float64(longest)).Round(time.Second),
	}
}

func nodePool(np model.NodePool) gcpinputs.NodePoolArgs {
	out := gcpinputs.NodePoolArgs{
		Name: np.Name, Isolation: np.Isolation, MachineType: np.MachineType,
		MinNodes: int(np.MinNodes), MaxNodes: int(np.MaxNodes), Shared: np.Shared,
	}
	if len(np.Labels) > 0 {
		out.Labels = map[string]string{}
		for k, v := range np.Labels {
			out.Labels[k] = v
		}
	}
	for _, t := range np.Taints {
		out.Taints = append(out.Taints, gcpinputs.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

// SinkName is the Cloud Logging sink name of an audit sink: prefixed with the
// platform, since sink names are unique per project.
func SinkName(p *model.Platform, s model.AuditSink) string { return p.Name + "-" + s.Name }

// kataShim is one shim and the first runtime class that names it.
type kataShim struct {
	shim string
	rc   *model.RuntimeClass
}

// kataShims are the distinct Kata shims of p's runtime classes, in
// declaration order.
func kataShims(p *model.Platform) []kataShim {
	var out []kataShim
	seen := map[string]bool{}
	for i := range p.RuntimeClasses {
		rc := &p.RuntimeClasses[i]
		if model.HandlerIsolation(rc.Handler) != model.IsolationKVM {
			continue
		}
		shim := model.KataShim(rc.Handler)
		if shim == "" || seen[shim] {
			continue
		}
		seen[shim] = true
		out = append(out, kataShim{shim, rc})
	}
	return out
}

// workloadIdentityLabel is the spec label of a workload identity's KSA.
var workloadIdentityLabel = map[string]string{
	model.AgentOrchestratorServiceAccount: "orchestrator",
	model.AgentRuntimeServiceAccount:      "agent",
}

// Source is the spec address and range of what a violation of the GCP rules
// (on Args(p)) is about: the argument that sets the offending value, or the
// block that holds the default that breaks the rule.
func Source(p *model.Platform, v rules.Violation) (object string, src model.Range) {
	platform := func() (string, model.Range) { return "platform", p.Src }
	kind, name, _ := strings.Cut(v.Object, ".")
	attr := v.Attr
	base := attr
	if i := strings.IndexByte(attr, '['); i >= 0 {
		base = attr[:i]
	}
	switch kind {
	case "cluster":
		switch base {
		case "project", "location":
			return "target", p.Target.Attrs.At(base, p.Target.Src)
		case "name":
			// The cluster's name is cluster_name, or the platform's name.
			if r, ok := p.Target.Attrs["cluster_name"]; ok {
				return "target", r
			}
			return platform()
		}
		c := p.Cluster
		if c == nil {
			return "target", p.Target.Src
		}
		return "cluster", c.Attrs.At(base, orRange(c.Src, p.Target.Src))
	case "node_pool":
		for i := range p.NodePools {
			np := &p.NodePools[i]
			if np.Name != name {
				continue
			}
			obj := "node_pool." + np.Name
			switch base {
			case "machine_type", "labels", "dedicated":
				return obj, np.Attrs.At(base, np.Src)
			case "isolation":
				// dedicated and smt only apply to KVM pools: on any other pool
				// the spec's dedicated = false is what is wrong.
				if np.Isolation != model.IsolationKVM && np.Shared {
					return obj, np.Attrs.At("dedicated", np.Src)
				}
				return obj, np.Attrs.At("isolation", np.Src)
			}
			return obj, np.Src
		}
	case "kata":
		shims := kataShims(p)
		i := 0
		if base == "shims" {
			i, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(attr, "shims["), "]"))
		}
		if i >= 0 && i < len(shims) {
			rc := shims[i].rc
			return "runtime_class." + rc.Name, rc.Attrs.At("handler", rc.Src)
		}
	case "workload_identity":
		ns, ksa, _ := strings.Cut(name, "/")
		for ti := range p.Tenants {
			t := &p.Tenants[ti]
			if t.Namespace != ns {
				continue
			}
			if wi := t.Identity.WorkloadIdentity(ksa); wi != nil {
				obj := "tenant." + t.Name + ".workload_identity." + workloadIdentityLabel[ksa]
				if base == "roles" {
					return obj, wi.Attrs.At("roles", wi.Src)
				}
				return obj, wi.Src
			}
		}
	case "audit_sink":
		for i := range p.AuditSinks {
			s := &p.AuditSinks[i]
			if SinkName(p, *s) != name {
				continue
			}
			obj := "audit_sink." + s.Name
			switch base {
			case "destination", "filters", "kind":
				return obj, s.Attrs.At(base, s.Src)
			}
			return obj, s.Src
		}
	}
	return platform()
}

func orRange(r, fallback model.Range) model.Range {
	if r.Known() {
		return r
	}
	return fallback
}
