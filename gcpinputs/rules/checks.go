package rules

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddock-platform/paddock/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-001", Title: "Cluster location",
		Hint: `Set the GCP project id, a region ("europe-west4") or zone ("europe-west4-a") and a cluster name of lowercase letters, digits and dashes.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			c := p.Cluster
			if !projectRE.MatchString(c.Project) {
				out = append(out, v("cluster", "project", "project %q is not a GCP project id", c.Project))
			}
			if !regionRE.MatchString(c.Location) && !zoneRE.MatchString(c.Location) {
				out = append(out, v("cluster", "location", "location %q is neither a region nor a zone", c.Location))
			}
			if !clusterRE.MatchString(c.Name) {
				out = append(out, v("cluster", "name", "cluster name %q is not a valid GKE cluster name (1-40 characters, [a-z0-9-], starting with a letter)", c.Name))
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-002", Title: "Release channel",
		Hint: `Use release_channel = "rapid", "regular" or "stable".`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			switch p.Cluster.ReleaseChannel {
			case gcpinputs.ChannelRapid, gcpinputs.ChannelRegular, gcpinputs.ChannelStable:
				return nil
			}
			return []Violation{v("cluster", "release_channel", "release channel %q is not RAPID, REGULAR or STABLE (GKE's auto-upgrades need a channel)", p.Cluster.ReleaseChannel)}
		},
	})

	register(Rule{
		ID: "GCP-003", Title: "Control plane access",
		Hint: "List the CIDRs of the networks that administer the cluster; never 0.0.0.0/0. The private endpoint range must be an RFC 1918 /28.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for i, n := range p.Cluster.AuthorizedNetworks {
				attr := fmt.Sprintf("authorized_networks[%d]", i)
				pfx, err := netip.ParsePrefix(n.CIDR)
				switch {
				case err != nil:
					out = append(out, v("cluster", attr, "%q is not a CIDR", n.CIDR))
				case pfx.Bits() == 0:
					out = append(out, v("cluster", attr, "%s opens the control plane to the whole internet", n.CIDR))
				case pfx.Masked() != pfx:
					out = append(out, v("cluster", attr, "%s has host bits set (did you mean %s?)", n.CIDR, pfx.Masked()))
				}
			}
			if !p.Cluster.PublicNodes {
				pfx, err := netip.ParsePrefix(p.Cluster.MasterCIDR)
				if err != nil || !pfx.Addr().Is4() || pfx.Bits() != 28 || !pfx.Addr().IsPrivate() || pfx.Masked() != pfx {
					out = append(out, v("cluster", "master_cidr", "%q is not a private IPv4 /28 (GKE's private control plane range)", p.Cluster.MasterCIDR))
				}
			}
			if p.Cluster.PrivateEndpoint && p.Cluster.PublicNodes {
				out = append(out, v("cluster", "private_endpoint", "a private-only control plane needs private nodes"))
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-004", Title: "FQDN network policy needs Dataplane V2",
		Hint: "Keep dataplane_v2 on (the default) or drop the FQDN egress allowlists.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if p.Cluster.FQDNNetworkPolicy && p.Cluster.DisableDataplaneV2 {
				return []Violation{v("cluster", "dataplane_v2", "FQDN network policies (egress allowlists by host name) are only enforced by GKE Dataplane V2, which is turned off")}
			}
			return nil
		},
	})

	register(Rule{
		ID: "GCP-018", Title: "FQDN allow-lists need FQDN network policy",
		Hint: "Set cluster { fqdn_network_policy = true } (sticky: turning it off later replaces the cluster), or drop the tenants' fqdns.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if len(p.FQDNNamespaces) == 0 || p.Cluster.FQDNNetworkPolicy {
				return nil
			}
			return []Violation{v("cluster", "fqdn_network_policy", "tenant namespaces %s allow egress by host name (fqdns), which GKE enforces only with FQDN network policy, and the cluster leaves it off",
				strings.Join(p.FQDNNamespaces, ", "))}
		},
	})

	register(Rule{
		ID: "GCP-005", Title: "Workload identity needs the workload pool",
		Hint: "Keep workload_identity on for the cluster (the default), or give no tenant identity cloud access.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if !p.Cluster.DisableWorkloadIdentity {
				return nil
			}
			var out []Violation
			for _, wi := range p.WorkloadIdentities {
				out = append(out, v(wiAddr(wi), "", "needs GKE Workload Identity (the %s pool), which the cluster turns off", gcpinputs.WorkloadPool(p.Cluster.Project)))
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-006", Title: "Node pool names and sizes",
		Hint: "Name pools with 1-40 lowercase letters, digits and dashes, each once, and give the autoscaler 0 <= min <= max, max >= 1 (min >= 1 for the system pool).",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seen := map[string]bool{}
			for _, e := range allPools(p) {
				np := e.pool
				if !poolNameRE.MatchString(np.Name) {
					out = append(out, v(e.addr, "name", "%q is not a valid node pool name", np.Name))
				}
				if seen[np.Name] {
					out = append(out, v(e.addr, "name", "node pool %q is declared twice (the system pool is %q)", np.Name, p.SystemPool.Name))
				}
				seen[np.Name] = true
				if np.MinNodes < 0 || np.MaxNodes < 1 || np.MinNodes > np.MaxNodes {
					out = append(out, v(e.addr, "autoscaling", "min %d, max %d: want 0 <= min <= max and max >= 1", np.MinNodes, np.MaxNodes))
				} else if e.addr == "system_pool" && np.MinNodes < 1 {
					// Every other pool is tainted for sandboxes: with the system
					// pool at zero, kube-dns, GKE's agents and the Agent Sandbox
					// controller (and its webhook) have no node until the
					// autoscaler reacts to a pending pod, and claims fail meanwhile.
					out = append(out, v(e.addr, "autoscaling", "min %d: the system pool must keep at least one node (GKE's own workloads and the Agent Sandbox controller run only there)", np.MinNodes))
				}
				if !machineRE.MatchString(np.MachineType) {
					out = append(out, v(e.addr, "machine_type", "%q is not a Compute Engine machine type", np.MachineType))
				}
				if np.DiskSizeGB != 0 && np.DiskSizeGB < 10 {
					out = append(out, v(e.addr, "disk_size_gb", "%d GB is below GKE's 10 GB minimum", np.DiskSizeGB))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-007", Title: "Node pool isolation",
		Hint: `Sandbox pools have isolation = "gvisor" or "kvm"; the system pool has none.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			if p.SystemPool.Isolation != gcpinputs.IsolationNone {
				out = append(out, v("system_pool", "isolation", "the system pool runs GKE's own workloads and must not be sandboxed (GKE Sandbox cannot be a cluster's only pool)"))
			}
			for _, np := range p.NodePools {
				if np.Isolation != gcpinputs.IsolationGVisor && np.Isolation != gcpinputs.IsolationKVM {
					out = append(out, v(poolAddr(np), "isolation", "isolation %q is not gvisor or kvm", np.Isolation))
				}
				if np.Isolation != gcpinputs.IsolationKVM && (np.Shared || np.DisableSMT) {
					out = append(out, v(poolAddr(np), "isolation", "dedicated and smt only apply to kvm pools"))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-008", Title: "gVisor pool image",
		Hint: `Leave image_type unset (COS_CONTAINERD) on gVisor pools.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationGVisor) {
				if np.ImageType != gcpinputs.ImageCOSContainerd {
					out = append(out, v(poolAddr(np), "image_type", "GKE Sandbox (gVisor) runs only on %s, not %s", gcpinputs.ImageCOSContainerd, np.ImageType))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-009", Title: "GKE Sandbox label and taint are GKE's",
		Hint: "Remove the sandbox.gke.io/runtime label or taint: GKE puts it on gVisor nodes itself, and on any other pool it would draw gVisor pods onto nodes without gVisor.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, e := range allPools(p) {
				if _, ok := e.pool.Labels[gcpinputs.GKESandboxKey]; ok {
					out = append(out, v(e.addr, "labels", "sets %s, which GKE applies to gVisor pools itself", gcpinputs.GKESandboxKey))
				}
				for i, t := range e.pool.Taints {
					if t.Key == gcpinputs.GKESandboxKey {
						out = append(out, v(e.addr, fmt.Sprintf("taints[%d]", i), "sets taint %s, which GKE applies to gVisor pools itself", gcpinputs.GKESandboxKey))
					}
				}
				if _, ok := e.pool.Labels[gcpinputs.IsolationKey]; ok {
					out = append(out, v(e.addr, "labels", "sets %s, which Paddock derives from the pool's isolation", gcpinputs.IsolationKey))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-010", Title: "KVM pool machine series",
		Hint: "Use an Intel machine series with nested virtualisation for kvm pools: " + strings.ToUpper(strings.Join(NestedVirtSeries, ", ")) + " (e.g. n2-standard-4).",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationKVM) {
				if ok, why := SupportsNestedVirtualization(np.MachineType); !ok {
					out = append(out, v(poolAddr(np), "machine_type", "%s cannot run Kata: %s", np.MachineType, why))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-011", Title: "KVM pool image",
		Hint: `Leave image_type unset (UBUNTU_CONTAINERD) on kvm pools.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationKVM) {
				if np.ImageType != gcpinputs.ImageUbuntuContainerd {
					out = append(out, v(poolAddr(np), "image_type", "kata-deploy cannot install the Kata runtime on %s (a read-only root, noexec writable mounts); kvm pools need %s", np.ImageType, gcpinputs.ImageUbuntuContainerd))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-012", Title: "Node labels and taints",
		Hint: "Use Kubernetes label keys and values, and taint effects NoSchedule, PreferNoSchedule or NoExecute; the system pool takes no NoSchedule/NoExecute taint.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, e := range allPools(p) {
				for _, k := range sortedKeys(e.pool.Labels) {
					if errs := validation.IsQualifiedName(k); len(errs) > 0 {
						out = append(out, v(e.addr, "labels", "label key %q: %s", k, strings.Join(errs, "; ")))
					}
					if errs := validation.IsValidLabelValue(e.pool.Labels[k]); len(errs) > 0 {
						out = append(out, v(e.addr, "labels", "label %q value %q: %s", k, e.pool.Labels[k], strings.Join(errs, "; ")))
					}
				}
				for i, t := range e.pool.Taints {
					attr := fmt.Sprintf("taints[%d]", i)
					if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
						out = append(out, v(e.addr, attr, "taint key %q: %s", t.Key, strings.Join(errs, "; ")))
					}
					if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
						out = append(out, v(e.addr, attr, "taint value %q: %s", t.Value, strings.Join(errs, "; ")))
					}
					if !validEffects[t.Effect] {
						out = append(out, v(e.addr, attr, "taint effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect))
					}
					if e.addr == "system_pool" && t.Effect != gcpinputs.EffectPreferNoSchedule {
						out = append(out, v(e.addr, attr, "a %s taint on the system pool leaves GKE's system workloads nowhere to run", t.Effect))
					}
				}
				for _, k := range sortedKeys(e.pool.ResourceLabels) {
					if !gcpLabelKey.MatchString(k) || !gcpLabelVal.MatchString(e.pool.ResourceLabels[k]) {
						out = append(out, v(e.addr, "resource_labels", "GCP label %q=%q: keys and values are lowercase letters, digits, _ and -", k, e.pool.ResourceLabels[k]))
					}
				}
			}
			for _, k := range sortedKeys(p.Cluster.Labels) {
				if !gcpLabelKey.MatchString(k) || !gcpLabelVal.MatchString(p.Cluster.Labels[k]) {
					out = append(out, v("cluster", "labels", "GCP label %q=%q: keys and values are lowercase letters, digits, _ and -", k, p.Cluster.Labels[k]))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-013", Title: "Kata shims",
		Hint: `Use shims "qemu" and/or "clh".`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seen := map[string]bool{}
			for i, s := range p.Kata.Shims {
				if _, _, ok := gcpinputs.KataOverhead(s); !ok {
					out = append(out, v("kata", fmt.Sprintf("shims[%d]", i), "unknown Kata shim %q (want qemu or clh)", s))
				}
				if seen[s] {
					out = append(out, v("kata", fmt.Sprintf("shims[%d]", i), "shim %q listed twice", s))
				}
				seen[s] = true
			}
			if len(p.PoolsOf(gcpinputs.IsolationKVM)) == 0 && (len(p.Kata.Shims) > 0 || p.Kata.Image != "") {
				out = append(out, v("kata", "", "Kata is configured but no node pool has isolation kvm"))
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-014", Title: "Workload identity bindings",
		Hint: "Bind one Kubernetes service account (namespace/name) per identity and grant it only the predefined or custom roles it needs, never basic or IAM-admin roles.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seenKSA := map[string]bool{}
			seenID := map[string]bool{}
			for _, wi := range p.WorkloadIdentities {
				addr := wiAddr(wi)
				if errs := validation.IsDNS1123Label(wi.Namespace); len(errs) > 0 {
					out = append(out, v(addr, "namespace", "namespace %q: %s", wi.Namespace, strings.Join(errs, "; ")))
				}
				if errs := validation.IsDNS1123Subdomain(wi.KSA); len(errs) > 0 {
					out = append(out, v(addr, "service_account", "service account %q: %s", wi.KSA, strings.Join(errs, "; ")))
				}
				if !saIDRE.MatchString(wi.AccountID) {
					out = append(out, v(addr, "account_id", "%q is not a Google service account id (6-30 characters, [a-z0-9-])", wi.AccountID))
				}
				if k := wi.Namespace + "/" + wi.KSA; seenKSA[k] {
					out = append(out, v(addr, "", "the service account %s is bound twice", k))
				} else {
					seenKSA[k] = true
				}
				if seenID[wi.AccountID] {
					out = append(out, v(addr, "account_id", "Google service account id %q is used by two identities", wi.AccountID))
				}
				seenID[wi.AccountID] = true
				if len(wi.Roles) == 0 {
					out = append(out, v(addr, "roles", "grants no role: an identity that needs no cloud access needs no Google service account"))
				}
				seenRole := map[string]bool{}
				for i, r := range wi.Roles {
					attr := fmt.Sprintf("roles[%d]", i)
					switch why, bad := forbiddenRoles[r]; {
					case !roleRE.MatchString(r):
						out = append(out, v(addr, attr, "%q is not an IAM role (roles/..., projects/P/roles/... or organizations/O/roles/...)", r))
					case bad:
						out = append(out, v(addr, attr, "%s may not be granted to a sandbox identity: %s", r, why))
					case seenRole[r]:
						out = append(out, v(addr, attr, "%s is listed twice", r))
					}
					seenRole[r] = true
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-015", Title: "Audit sink destination",
		Hint: "Name the sink (letters, digits, _ - .), pick kind bigquery, storage or pubsub, and a destination valid for it: a dataset id ([A-Za-z0-9_]), a bucket name (3-63 of [a-z0-9_.-]), a topic name.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			names := map[string]bool{}
			dests := map[string]bool{}
			for _, s := range p.AuditSinks {
				addr := "audit_sink." + s.Name
				if !sinkNameRE.MatchString(s.Name) {
					out = append(out, v(addr, "name", "%q is not a log sink name", s.Name))
				}
				if names[s.Name] {
					out = append(out, v(addr, "name", "sink %q is declared twice", s.Name))
				}
				names[s.Name] = true
				if k := s.Kind + "/" + s.Destination; dests[k] {
					out = append(out, v(addr, "destination", "destination %s is used by two sinks (Paddock creates and owns it)", k))
				} else {
					dests[k] = true
				}
				switch s.Kind {
				case gcpinputs.AuditBigQuery:
					if !datasetRE.MatchString(s.Destination) || len(s.Destination) > 1024 {
						out = append(out, v(addr, "destination", "%q is not a BigQuery dataset id", s.Destination))
					}
					if s.RetentionDays < 0 {
						out = append(out, v(addr, "retention_days", "negative retention"))
					}
				case gcpinputs.AuditStorage:
					if !bucketRE.MatchString(s.Destination) || strings.HasPrefix(s.Destination, "goog") || strings.Contains(s.Destination, "google") {
						out = append(out, v(addr, "destination", "%q is not a valid Cloud Storage bucket name", s.Destination))
					}
					if s.RetentionDays < 1 {
						out = append(out, v(addr, "retention_days", "an audit bucket needs a retention policy of at least one day"))
					}
				case gcpinputs.AuditPubSub:
					if !topicRE.MatchString(s.Destination) || strings.HasPrefix(strings.ToLower(s.Destination), "goog") {
						out = append(out, v(addr, "destination", "%q is not a valid Pub/Sub topic name", s.Destination))
					}
					if s.RetentionDays < 0 || s.RetentionDays > 31 {
						out = append(out, v(addr, "retention_days", "Pub/Sub keeps messages 10 minutes to 31 days, not %d days", s.RetentionDays))
					}
				default:
					out = append(out, v(addr, "kind", "unknown sink kind %q (want bigquery, storage or pubsub)", s.Kind))
				}
				if s.LockRetention && s.Kind != gcpinputs.AuditStorage {
					out = append(out, v(addr, "lock_retention", "only a storage sink has a lockable retention policy"))
				}
				if _, err := gcpinputs.AuditFilter(s.Filter); err != nil {
					out = append(out, v(addr, "filters", "%s", strings.TrimPrefix(err.Error(), "audit filter: ")))
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-016", Title: "Network drop logging needs Dataplane V2",
		Hint: "Keep dataplane_v2 on to log network policy denials, or drop the network_drops filter.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if !p.Cluster.DisableDataplaneV2 {
				return nil
			}
			var out []Violation
			for _, s := range p.AuditSinks {
				for _, e := range s.Filter.Events {
					if e == gcpinputs.EventNetworkDrops {
						out = append(out, v("audit_sink."+s.Name, "filters", "network policy logging (network_drops) exists only on Dataplane V2, which is turned off"))
					}
				}
			}
			return out
		},
	})

	register(Rule{
		ID: "GCP-017", Title: "Alert policies",
		Hint: "Set sandbox_max_lifetime to at least a minute (a little above the claims' max TTL), or leave it unset.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			if p.Alerts == nil {
				return nil
			}
			var out []Violation
			if d := p.Alerts.SandboxMaxLifetime; d != 0 && d.Seconds() < 60 {
				out = append(out, v("alerts", "sandbox_max_lifetime", "%s is below a minute: every sandbox would alert", d))
			}
			if !p.Alerts.QuotaSaturation && p.Alerts.SandboxMaxLifetime == 0 {
				out = append(out, v("alerts", "", "no alert selected"))
			}
			return out
		},
	})
}

func wiAddr(wi gcpinputs.WorkloadIdentityArgs) string {
	return "workload_identity." + wi.Namespace + "/" + wi.KSA
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
