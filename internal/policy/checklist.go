package policy

// The two checklists the rules trace to, word for word:
//
//   - H1..H23: "The final hardening checklist" of Running AI Agents on
//     Kubernetes Without Handing Them the Cluster (seed 004).
//   - L1..L11: the "Launch Checklist" of AI Agent, Sandbox, and Tool
//     Execution (seed 000).
//
// A test asserts that every item is traced by at least one rule.

// ChecklistItem is one item of a checklist.
type ChecklistItem struct {
	ID        string // "H9", "L3"
	Checklist string // "hardening" or "launch"
	Section   string
	Text      string
}

// Checklist names.
const (
	Hardening = "hardening"
	Launch    = "launch"
)

var checklist = []ChecklistItem{
	{"H1", Hardening, "Namespace and resources", "Dedicated agents namespace; Pod Security Standards enforced at restricted"},
	{"H2", Hardening, "Namespace and resources", "ResourceQuota caps pods, CPU, memory and ephemeral storage for the whole namespace"},
	{"H3", Hardening, "Namespace and resources", "LimitRange defaults set so no container runs unbounded"},
	{"H4", Hardening, "Namespace and resources", "(Scale-up) Agent workloads tainted onto a dedicated node pool"},
	{"H5", Hardening, "Identity", "Agent runtime ServiceAccount with automountServiceAccountToken: false and no RoleBindings"},
	{"H6", Hardening, "Identity", "Orchestrator identity scoped to claims/sandboxes in the agents namespace only"},
	{"H7", Hardening, "Identity", "No kubeconfigs, cloud key files or shared tokens inside the sandbox image"},
	{"H8", Hardening, "Kernel and pod hardening", "gVisor (or Kata) registered on nodes; RuntimeClass created and verified with a test pod"},
	{"H9", Hardening, "Kernel and pod hardening", "Template sets runtimeClassName, runAsNonRoot, seccomp RuntimeDefault"},
	{"H10", Hardening, "Kernel and pod hardening", "Containers: allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, all capabilities dropped"},
	{"H11", Hardening, "Kernel and pod hardening", "Per-container requests and limits, including ephemeral storage"},
	{"H12", Hardening, "Lifecycle", "Agent Sandbox installed pinned, CRDs and controller verified"},
	{"H13", Hardening, "Lifecycle", "One hardened SandboxTemplate per workload type, owned and reviewed by the platform team"},
	{"H14", Hardening, "Lifecycle", "Warm pools are per-trust-boundary; claimed sandboxes are never reused"},
	{"H15", Hardening, "Lifecycle", "Claims carry lifecycle expiry (ttlSecondsAfterFinished + shutdownPolicy: Delete)"},
	{"H16", Hardening, "Network", "Default-deny NetworkPolicy (ingress and egress) on the namespace"},
	{"H17", Hardening, "Network", "Egress allows DNS and named destinations only; no port-80 egress (metadata stays unreachable)"},
	{"H18", Hardening, "Network", "FQDN allowlist or egress proxy in place — not bare \"443 to the world\""},
	{"H19", Hardening, "Network", "Policy enforcement verified with a live test, not assumed from the YAML"},
	{"H20", Hardening, "Secrets and audit", "LLM credentials are dedicated, spend-capped keys in a namespace-scoped Secret; sandbox fails closed without them"},
	{"H21", Hardening, "Secrets and audit", "Per-session/execution-scoped tokens where the design allows; projected audience-bound tokens for any in-pod API need"},
	{"H22", Hardening, "Secrets and audit", "API audit covers sandbox/claim create and delete; pod and tool-call logs ship outside the sandbox"},
	{"H23", Hardening, "Secrets and audit", "Alerts on sandbox lifetime anomalies, quota saturation and policy drops"},

	{"L1", Launch, "Launch Checklist", "Clarify the state and permission model that distinguishes Agents from ordinary services"},
	{"L2", Launch, "Launch Checklist", "Separate the execution environment, Agent control plane, and Tool Gateway"},
	{"L3", Launch, "Launch Checklist", "Use an appropriate RuntimeClass or stronger isolation for untrusted code"},
	{"L4", Launch, "Launch Checklist", "Use a dedicated least-privilege identity for each Sandbox"},
	{"L5", Launch, "Launch Checklist", "Default-deny networking, with all tool access through a controlled proxy"},
	{"L6", Launch, "Launch Checklist", "Tool permissions have parameter Schema, budgets, audit, and approval"},
	{"L7", Launch, "Launch Checklist", "Prompt Injection cannot expand platform authorization"},
	{"L8", Launch, "Launch Checklist", "Session Tokens, time, cost, and storage all have hard limits"},
	{"L9", Launch, "Launch Checklist", "Workspace retention and cleanup policies are explicit"},
	{"L10", Launch, "Launch Checklist", "Agent artifacts must go through trusted CI before release"},
	{"L11", Launch, "Launch Checklist", "Audit records capture the action chain without leaking sensitive content"},
}

// ChecklistItems returns both checklists, hardening first.
func ChecklistItems() []ChecklistItem { return append([]ChecklistItem(nil), checklist...) }

// LookupChecklistItem returns the item with the given ID.
func LookupChecklistItem(id string) (ChecklistItem, bool) {
	for _, it := range checklist {
		if it.ID == id {
			return it, true
		}
	}
	return ChecklistItem{}, false
}
