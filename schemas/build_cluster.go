package schemas

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// Building the target, the GKE cluster and its node pools.

var (
	gcpProjectRe  = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	gcpLocationRe = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+(-[a-z])?$`)
	gkeClusterRe  = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)
	machineTypeRe = regexp.MustCompile(`^[a-z][a-z0-9]*-[a-z0-9-]+$`)
)

// target builds the target block: the kind of cluster the platform runs on
// and its arguments (the FQDN policy engine follows from the kind).
func (b *builder) target(tc *node) model.Target {
	t := model.Target{Kind: model.TargetKind(tc.Label), Src: tc.src(), Attrs: tc.attrs()}
	switch tc.Label {
	case targetLocal:
		t.FQDNPolicy = model.FQDNPolicyCilium
	case targetGKE:
		t.FQDNPolicy = model.FQDNPolicyGKE
	case targetKubeconfig:
		t.FQDNPolicy = model.FQDNPolicyNone
		if v, st := b.str(tc.attr(argFqdnPolicy)); st == set {
			t.FQDNPolicy = v
		}
	}
	switch tc.Label {
	case targetKubeconfig:
		// An empty path means $KUBECONFIG or ~/.kube/config, resolved at use time.
		if p, st := b.str(tc.attr(argPath)); st == set {
			if strings.TrimSpace(p) == "" {
				b.errorf(tc.attr(argPath).Expr.Range(), "Invalid kubeconfig path",
					"path is empty. Remove the argument to use $KUBECONFIG or ~/.kube/config, or set the path of a kubeconfig file.")
			}
			t.Kubeconfig = p
		}
		if kctx, st := b.str(tc.attr(argContext)); st == set {
			if strings.TrimSpace(kctx) == "" {
				b.errorf(tc.attr(argContext).Expr.Range(), "Invalid kubeconfig context",
					"context is empty. Remove the argument to use the kubeconfig's current context, or name one of its contexts.")
			}
			t.Context = kctx
		}
	case targetGKE:
		project, st := b.str(tc.attr(argProject))
		if b.required(st, tc.attr(argProject), tc.blockMeta, argProject, "the Google Cloud project ID", `project = "my-project"`) == set {
			if !gcpProjectRe.MatchString(project) {
				b.errorf(tc.attr(argProject).Expr.Range(), "Invalid project ID",
					"%q is not a Google Cloud project ID: 6 to 30 lower case letters, digits and '-', starting with a letter. Use the ID, not the display name or number.", project)
			}
			t.Project = project
		}
		loc, st := b.str(tc.attr(argLocation))
		if b.required(st, tc.attr(argLocation), tc.blockMeta, argLocation, "a region or zone", `location = "europe-west1"`) == set {
			if !gcpLocationRe.MatchString(loc) {
				b.errorf(tc.attr(argLocation).Expr.Range(), "Invalid location",
					"%q is not a Google Cloud region (\"europe-west1\") or zone (\"europe-west1-b\").", loc)
			}
			t.Location = loc
		}
		t.ClusterName = b.p.Name
		if name, st := b.str(tc.attr(argClusterName)); st == set {
			if !gkeClusterRe.MatchString(name) {
				b.errorf(tc.attr(argClusterName).Expr.Range(), "Invalid cluster name",
					"%q is not a GKE cluster name: at most 40 lower case letters, digits and '-', starting with a letter.", name)
			}
			t.ClusterName = name
		}
	}
	return t
}

// cluster builds the cluster block of a GKE target onto model.DefaultCluster;
// with any other target it reports the cluster and node_pool blocks, which
// configure a cluster Paddock creates.
func (b *builder) cluster(cfg *config) {
	gke := cfg.Target != nil && cfg.Target.Label == targetGKE
	if !gke {
		// Cluster settings and node pools belong to a cluster Paddock creates.
		if cfg.Target != nil && slices.Contains(targetKinds, cfg.Target.Label) {
			for _, n := range append([]*node{cfg.Cluster}, cfg.NodePools...) {
				if n == nil {
					continue
				}
				b.errorf(n.DefRange, fmt.Sprintf("%s block needs target \"gke\"", n.Type),
					"The %s block configures the GKE cluster Paddock creates, but this spec's target is %q, a cluster Paddock does not create. Remove the block, or use target \"gke\".",
					n.what(), cfg.Target.Label)
			}
		}
		return
	}
	c := model.DefaultCluster()
	c.Src = b.p.Target.Src
	n := cfg.Cluster
	if n != nil {
		c.Src, c.Attrs = n.src(), n.attrs()
	}
	if v, st := b.enum(n.attr(argReleaseChannel), releaseChannels, "release channel"); st == set {
		c.ReleaseChannel = v
	}
	if v, st := b.boolean(n.attr(argPrivateNodes)); st == set {
		c.PublicNodes = !v
	}
	if v, st := b.boolean(n.attr(argDataplaneV2)); st == set {
		c.NoDataplaneV2 = !v
	}
	if v, st := b.boolean(n.attr(argWorkloadIdentity)); st == set {
		c.NoWorkloadIdentity = !v
	}
	if v, st := b.boolean(n.attr(argDeletionProtection)); st == set {
		c.AllowDeletion = !v
	}
	if v, st := b.boolean(n.attr(argFqdnNetworkPolicy)); st == set {
		c.FQDNNetworkPolicy = v
	}
	if v, st := b.boolean(n.attr(argAllowReplacement)); st == set {
		c.AllowReplacement = v
	}
	if nets, st := b.strList(n.attr(argAuthorizedNetworks)); st == set {
		for _, cidr := range nets {
			b.cidr(n.attr(argAuthorizedNetworks), cidr)
		}
		c.AuthorizedNetworks = nets
	}
	b.p.Cluster = &c
}

// cidr reports a value of attr that is not a CIDR. It reads it with
// model.ParseCIDR, the parser every later stage uses, so a range that passes
// here never fails later.
func (b *builder) cidr(attr *hcl.Attribute, s string) bool {
	if _, err := model.ParseCIDR(s); err != nil {
		b.errorf(attr.Expr.Range(), "Invalid CIDR",
			"%q is not an address range in CIDR notation, such as \"10.0.0.0/8\" or \"203.0.113.7/32\" (%s).", s, cidrReason(err))
		return false
	}
	return true
}

// cidrReason is the parser's complaint without the repeated input.
func cidrReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "): "); i >= 0 && strings.HasPrefix(msg, "netip.ParsePrefix(") {
		return msg[i+3:]
	}
	return msg
}

// nodePool builds a node_pool block onto model.DefaultNodePool of its
// isolation; ok is false when the pool cannot be used.
func (b *builder) nodePool(n *node) (model.NodePool, bool) {
	isolation := model.DefaultNodePoolIsolation
	if v, st := b.enum(n.attr(argIsolation), isolations, "isolation"); st == set {
		isolation = v
	}
	np := model.DefaultNodePool(n.Label, isolation)
	np.Src, np.Attrs = n.src(), n.attrs()
	if mt, st := b.str(n.attr(argMachineType)); st == set {
		// Whether the series has nested virtualization (isolation "kvm") is
		// the GCP layer's rule GCP-010, which policy runs with this argument's
		// range: one list of series, in internal/gcpinputs/rules.
		if !machineTypeRe.MatchString(mt) {
			b.errorf(n.attr(argMachineType).Expr.Range(), "Invalid machine type",
				"%q is not a Compute Engine machine type such as \"e2-standard-4\".", mt)
		}
		np.MachineType = mt
	}
	if as := n.one(blockAutoscaling); as != nil {
		if v, st := b.integer(as.attr(argMin), 0, maxNodes); st == set {
			np.MinNodes = int32(v)
		}
		if v, st := b.integer(as.attr(argMax), 1, maxNodes); st == set {
			np.MaxNodes = int32(v)
		}
		if np.MinNodes > np.MaxNodes {
			at := as.DefRange
			if a := as.attr(argMin); a != nil {
				at = a.Expr.Range()
			}
			b.errorf(at, "Invalid autoscaling bounds", "min (%d) is above max (%d).", np.MinNodes, np.MaxNodes)
		}
	}
	if entries, st := b.strMap(n.attr(argLabels)); st == set {
		np.Labels = b.labels(entries, "node label")
	}
	for _, tn := range n.all(blockTaint) {
		t := model.Taint{Effect: "NoSchedule"}
		key, st := b.str(tn.attr(argKey))
		if b.required(st, tn.attr(argKey), tn.blockMeta, argKey, "the taint key", `key = "example.com/dedicated"`) == set {
			if problem := labelKeyProblem(key); problem != "" {
				b.errorf(tn.attr(argKey).Expr.Range(), "Invalid taint key", "The taint key %q %s", key, problem)
			}
			t.Key = key
		}
		if v, st := b.str(tn.attr(argValue)); st == set {
			if problem := labelValueProblem(v); problem != "" {
				b.errorf(tn.attr(argValue).Expr.Range(), "Invalid taint value", "The taint value %q %s", v, problem)
			}
			t.Value = v
		}
		if v, st := b.enum(tn.attr(argEffect), taintEffects, "taint effect"); st == set {
			t.Effect = v
		}
		np.Taints = append(np.Taints, t)
	}
	if v, st := b.boolean(n.attr(argDedicated)); st == set {
		np.Shared = !v
	}
	return np, true
}

// labels checks label keys and values and returns them as a map.
func (b *builder) labels(entries []entry, what string) map[string]string {
	b.markLabelKeys(entries)
	out := map[string]string{}
	for _, en := range entries {
		if problem := labelKeyProblem(en.Key); problem != "" {
			b.errorf(en.KeyRange, "Invalid "+what+" key", "The label key %q %s", en.Key, problem)
		}
		if problem := labelValueProblem(en.Value); problem != "" {
			b.errorf(en.ValueRange, "Invalid "+what+" value", "The label value %q %s", en.Value, problem)
		}
		out[en.Key] = en.Value
	}
	return out
}
