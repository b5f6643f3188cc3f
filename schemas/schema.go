package schemas

import (
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// The spec language is declared once, here, as a tree of blockSpecs. The
// decoder derives its hcl.BodySchemas from it, `paddock schema` derives the
// JSON Schema from it (jsonschema.go), and the descriptions are the reference
// documentation. Whether an argument is required, and what its value may be
// beyond its type, is checked while building (build.go), so that a message
// can say what to write instead of HCL's generic one.

// Block type names of the spec language.
const (
	blockVariable         = "variable"
	blockValidation       = "validation"
	blockLocals           = "locals"
	blockPlatform         = "platform"
	blockTarget           = "target"
	blockCluster          = "cluster"
	blockNodePool         = "node_pool"
	blockAutoscaling      = "autoscaling"
	blockTaint            = "taint"
	blockAgentSandbox     = "agent_sandbox"
	blockRuntimeClass     = "runtime_class"
	blockToleration       = "toleration"
	blockTenant           = "tenant"
	blockQuota            = "quota"
	blockLimitRange       = "limit_range"
	blockIdentity         = "identity"
	blockToolGatewayToken = "tool_gateway_token"
	blockWorkloadIdentity = "workload_identity"
	blockEgress           = "egress"
	blockAllow            = "allow"
	blockProxy            = "proxy"
	blockClaims           = "claims"
	blockTemplate         = "template"
	blockResources        = "resources"
	blockWorkspace        = "workspace"
	blockSecretEnv        = "secret_env"
	blockWarmPool         = "warm_pool"
	blockAuditSink        = "audit_sink"
	blockObservability    = "observability"
	blockWaiver           = "waiver"
	blockTrustAdmission   = "trust_admission"
	blockEgressGateway    = "egress_gateway"
	blockDestination      = "destination"
	blockCredential       = "credential"
	blockBudgets          = "budgets"
)

// Target kinds, the label of a target block.
const (
	targetLocal      = "local"
	targetKubeconfig = "kubeconfig"
	targetGKE        = "gke"
)

// Keys of the requests and limits objects of a resources block.
const (
	resourceCPU              = "cpu"
	resourceMemory           = "memory"
	resourceEphemeralStorage = "ephemeral_storage"
)

var resourceKeys = []string{resourceCPU, resourceMemory, resourceEphemeralStorage}

// valueKind is what an argument holds, for the JSON Schema and the reference.
type valueKind int

const (
	kString      valueKind = iota
	kNumber                // a whole number
	kFraction              // any number, such as 0.9
	kBool                  //
	kStringList            // list of strings
	kNumberList            // list of whole numbers
	kStringMap             // object of strings
	kQuantity              // a Kubernetes quantity string ("250m", "2Gi")
	kQuantityMap           // object of quantities keyed by resource name
	kDuration              // a duration string ("10m", "1h30m") or "none"
	kAny                   // any value (for_each, variable defaults)
	kType                  // a type constraint (variable.type)
)

// nameRule says what a block's label must be.
type nameRule int

const (
	nameFree       nameRule = iota // anything (target kind: checked against Variants)
	nameDNSLabel                   // a DNS-1123 label: it names Kubernetes objects
	nameIdentifier                 // an HCL identifier (variables)
	nameEnvVar                     // an environment variable name
	nameEnum                       // one of blockSpec.Labels
)

// attrSpec is one argument of a block.
type attrSpec struct {
	Name    string
	Kind    valueKind
	Doc     string
	Enum    []string // allowed values, for strings
	Default string   // the default, as the reference shows it ("" for none)
	// Rules are the IDs of the policy rules that judge what the argument
	// sets; the reference names them from the rule registry.
	Rules []string
}

// blockSpec is one block type of the language.
type blockSpec struct {
	Type string
	// Label is the name of the block's one label ("" for unlabelled blocks).
	Label string
	Name  nameRule
	// Labels are the allowed labels of a nameEnum block; LabelHint says what
	// they mean, for the diagnostic of a wrong one.
	Labels    []string
	LabelHint string
	// What names the label in messages: "tenant", "runtime class".
	What string
	Doc  string
	// Rules are the IDs of the policy rules that judge the block.
	Rules []string
	// Repeat allows more than one block of this type in its parent; labelled
	// blocks must then have unique labels within Scope.
	Repeat bool
	Attrs  []attrSpec
	Blocks []*blockSpec
	// Variants are the bodies of a block whose label selects its kind (target).
	Variants map[string]*blockSpec
	// AnyAttrs accepts arguments of any name (locals).
	AnyAttrs bool

	once   sync.Once
	schema *hcl.BodySchema
}

// bodySchema is the hcl.BodySchema of the block's body, built once.
func (s *blockSpec) bodySchema() *hcl.BodySchema {
	s.once.Do(func() {
		bs := &hcl.BodySchema{}
		for _, a := range s.Attrs {
			bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: a.Name})
		}
		for _, b := range s.Blocks {
			h := hcl.BlockHeaderSchema{Type: b.Type}
			if b.Label != "" {
				h.LabelNames = []string{b.Label}
			}
			bs.Blocks = append(bs.Blocks, h)
		}
		s.schema = bs
	})
	return s.schema
}

// child is the spec of nested block type typ (nil if there is none).
func (s *blockSpec) child(typ string) *blockSpec {
	for _, b := range s.Blocks {
		if b.Type == typ {
			return b
		}
	}
	return nil
}

// attr is the spec of argument name (nil if there is none).
func (s *blockSpec) attr(name string) *attrSpec {
	for i := range s.Attrs {
		if s.Attrs[i].Name == name {
			return &s.Attrs[i]
		}
	}
	return nil
}

var tolerationSpec = &blockSpec{
	Type: blockToleration, Repeat: true,
	Doc: "A toleration sandbox pods of this runtime class get, for the taint of the nodes that provide it.",
	Attrs: []attrSpec{
		{Name: argKey, Kind: kString, Doc: "The taint key. Required unless operator is \"Exists\"."},
		{Name: argOperator, Kind: kString, Enum: tolerationOperators, Default: "Equal", Doc: "\"Equal\" matches the taint's value, \"Exists\" any value."},
		{Name: argValue, Kind: kString, Doc: "The taint value (operator \"Equal\")."},
		{Name: argEffect, Kind: kString, Enum: taintEffects, Doc: "The taint effect; leave out to tolerate every effect."},
	},
}

var resourcesSpec = &blockSpec{
	Type: blockResources,
	Doc:  "Per-container requests and limits. Anything left out takes the hardened default.",
	Attrs: []attrSpec{
		{Name: argRequests, Kind: kQuantityMap, Doc: "Requests by resource: cpu, memory, ephemeral_storage.", Default: `{ cpu = "250m", memory = "512Mi", ephemeral_storage = "1Gi" }`},
		{Name: argLimits, Kind: kQuantityMap, Doc: "Limits by resource: cpu, memory, ephemeral_storage.", Default: `{ cpu = "1", memory = "1Gi", ephemeral_storage = "2Gi" }`},
		{Name: argUnbounded, Kind: kStringList, Enum: resourceKeys, Doc: "LOOSENS: resources that get no limit at all.", Rules: []string{"PDK-308"}},
	},
}

var workspaceSpec = &blockSpec{
	Type: blockWorkspace,
	Doc:  "The sandbox's working volume, one per sandbox: never shared between sessions.",
	Attrs: []attrSpec{
		{Name: argKind, Kind: kString, Enum: []string{"ephemeral", "persistent"}, Default: "ephemeral", Doc: "\"ephemeral\": an emptyDir, gone with the pod. \"persistent\": a volume claim per sandbox, deleted with the sandbox."},
		{Name: argSize, Kind: kQuantity, Default: "5Gi", Doc: "Size limit (ephemeral) or requested size (persistent)."},
		{Name: argMountPath, Kind: kString, Default: "/workspace", Doc: "Where the workspace is mounted."},
		{Name: argStorageClass, Kind: kString, Doc: "Storage class of a persistent workspace (default: the cluster's)."},
	},
}

var secretEnvSpec = &blockSpec{
	Type: blockSecretEnv, Label: "name", Name: nameEnvVar, What: "environment variable", Repeat: true,
	Doc: "An environment variable read from a Secret in the tenant's namespace. It fails closed: no Secret, no sandbox.",
	Attrs: []attrSpec{
		{Name: argSecret, Kind: kString, Doc: "The Secret's name."},
		{Name: argKey, Kind: kString, Doc: "The key in the Secret."},
		{Name: argOptional, Kind: kBool, Default: "false", Doc: "LOOSENS: start the sandbox without the Secret.", Rules: []string{"PDK-601"}},
	},
}

var templateSpec = &blockSpec{
	Type: blockTemplate, Label: "name", Name: nameDNSLabel, What: "template", Repeat: true,
	Doc: "A hardened SandboxTemplate: non-root, seccomp RuntimeDefault, no privilege escalation, read-only root, no capabilities, no service account token. The arguments marked LOOSENS undo one of those; policy flags each.",
	Attrs: []attrSpec{
		{Name: argImage, Kind: kString, Doc: "The agent runtime image. Pin a tag or digest."},
		{Name: argCommand, Kind: kStringList, Doc: "The container's command."},
		{Name: argArgs, Kind: kStringList, Doc: "The container's arguments."},
		{Name: argRuntimeClass, Kind: kString, Doc: "The runtime_class sandboxes run under (gVisor or Kata). Leaving it out runs generated code on the host kernel.", Rules: []string{"PDK-301"}},
		{Name: argRunAsUser, Kind: kNumber, Default: "10001", Doc: "The UID the sandbox runs as; never 0."},
		{Name: argTmpSize, Kind: kQuantity, Default: "512Mi", Doc: "Size of the writable /tmp (the root filesystem is read-only)."},
		{Name: argEnv, Kind: kStringMap, Doc: "Plain environment variables. Never put credentials here: use secret_env."},
		{Name: argRunAsNonRoot, Kind: kBool, Default: "true", Doc: "LOOSENS when false: allow root.", Rules: []string{"PDK-303"}},
		{Name: argAllowPrivilegeEscalation, Kind: kBool, Default: "false", Doc: "LOOSENS when true.", Rules: []string{"PDK-305"}},
		{Name: argPrivileged, Kind: kBool, Default: "false", Doc: "LOOSENS when true: a privileged container.", Rules: []string{"PDK-305"}},
		{Name: argReadOnlyRoot, Kind: kBool, Default: "true", Doc: "LOOSENS when false: a writable root filesystem.", Rules: []string{"PDK-306"}},
		{Name: argAddCapabilities, Kind: kStringList, Doc: "LOOSENS: Linux capabilities added back after dropping ALL.", Rules: []string{"PDK-307"}},
		{Name: argSeccompProfile, Kind: kString, Default: "RuntimeDefault", Doc: "\"RuntimeDefault\", \"Localhost/<profile>\", or (LOOSENS) \"Unconfined\".", Rules: []string{"PDK-304"}},
		{Name: argAutomountToken, Kind: kBool, Default: "false", Doc: "LOOSENS when true: mount the agent's service account token.", Rules: []string{"PDK-201"}},
	},
	Blocks: []*blockSpec{resourcesSpec, workspaceSpec, secretEnvSpec},
}

var warmPoolSpec = &blockSpec{
	Type: blockWarmPool, Label: "name", Name: nameDNSLabel, What: "warm pool", Repeat: true,
	Doc: "Pre-created sandboxes of one template of this tenant. A claimed sandbox serves one session and is deleted, never returned.",
	Attrs: []attrSpec{
		{Name: argTemplate, Kind: kString, Doc: "The template of this tenant it keeps warm."},
		{Name: argReplicas, Kind: kNumber, Default: "1", Doc: "How many sandboxes to keep ready (0 to 100)."},
		{Name: argUpdateStrategy, Kind: kString, Enum: model.UpdateStrategies, Default: model.DefaultWarmPoolUpdateStrategy,
			Doc:   "What happens to unclaimed sandboxes built from an older template when the template changes: \"Recreate\" replaces them at once (`paddock up` waits until the pool holds only current ones); \"OnReplenish\" LOOSENS: the pool keeps handing them out until claims use them up.",
			Rules: []string{"PDK-410"}},
	},
}

var quotaSpec = &blockSpec{
	Type: blockQuota,
	Doc:  "The namespace's ResourceQuota: caps the tenant's whole fleet, so a runaway loop hurts only this tenant.",
	Attrs: []attrSpec{
		{Name: argPods, Kind: kNumber, Default: "20", Doc: "Maximum pods."},
		{Name: argCpu, Kind: kQuantity, Default: "8", Doc: "Maximum sum of CPU limits."},
		{Name: argMemory, Kind: kQuantity, Default: "16Gi", Doc: "Maximum sum of memory limits."},
		{Name: argEphemeralStorage, Kind: kQuantity, Default: "20Gi", Doc: "Maximum sum of ephemeral storage limits."},
		{Name: argPvcs, Kind: kNumber, Default: "20", Doc: "Maximum persistent volume claims."},
		{Name: argStorage, Kind: kQuantity, Default: "100Gi", Doc: "Maximum sum of persistent storage requests."},
		{Name: argEnabled, Kind: kBool, Default: "true", Doc: "LOOSENS when false: no quota at all.", Rules: []string{"PDK-103"}},
	},
}

var limitRangeSpec = &blockSpec{
	Type: blockLimitRange,
	Doc:  "The namespace's LimitRange: requests and limits of any container that sets none.",
	Attrs: []attrSpec{
		{Name: argDefault, Kind: kQuantityMap, Default: `{ cpu = "1", memory = "1Gi", ephemeral_storage = "2Gi" }`, Doc: "Default limits."},
		{Name: argDefaultRequest, Kind: kQuantityMap, Default: `{ cpu = "250m", memory = "512Mi", ephemeral_storage = "1Gi" }`, Doc: "Default requests."},
		{Name: argEnabled, Kind: kBool, Default: "true", Doc: "LOOSENS when false: no LimitRange.", Rules: []string{"PDK-105"}},
	},
}

// Labels of a workload_identity block: the Kubernetes service account it
// binds.
const (
	wiOrchestrator = "orchestrator"
	wiAgent        = "agent"
)

var workloadIdentityLabels = []string{wiOrchestrator, wiAgent}

var workloadIdentitySpec = &blockSpec{
	Type: blockWorkloadIdentity, Label: "service_account", Name: nameEnum, Labels: workloadIdentityLabels, What: "workload identity", Repeat: true,
	LabelHint: `The label names the tenant's Kubernetes service account that gets cloud access: "orchestrator" (agent-orchestrator) or "agent" (agent-runtime, the identity sandboxes run as).`,
	Rules:     []string{"PDK-207"},
	Doc: "Google Cloud access for one of the tenant's Kubernetes service accounts, through GKE Workload Identity (target \"gke\" only): " +
		"\"orchestrator\" (agent-orchestrator) or \"agent\" (agent-runtime, the sandboxes' own identity: LOOSENS). " +
		"Paddock creates a Google service account holding exactly the roles listed, lets only that Kubernetes service account impersonate it, and annotates the Kubernetes service account. No key is ever created.",
	Attrs: []attrSpec{
		{Name: argRoles, Kind: kStringList, Doc: "The project roles of the Google service account, and its only ones: predefined (\"roles/storage.objectViewer\") or custom (\"projects/<project>/roles/<name>\"). Basic roles (owner, editor, viewer) are refused."},
	},
}

var identitySpec = &blockSpec{
	Type: blockIdentity,
	Doc:  "The tenant's identities. The agent runtime always gets its own with zero Kubernetes permissions and no token.",
	Attrs: []attrSpec{
		{Name: argOrchestrator, Kind: kBool, Default: "true", Doc: "Create the agent-orchestrator identity, allowed only to manage SandboxClaims and read Sandboxes of this namespace."},
	},
	Blocks: []*blockSpec{workloadIdentitySpec, {
		Type: blockToolGatewayToken,
		Doc:  "Mount a projected, audience-bound, short-lived token into sandboxes, for an in-pod tool gateway that must call the API server.",
		Attrs: []attrSpec{
			{Name: argAudience, Kind: kString, Default: "tool-gateway", Doc: "The only audience that accepts the token."},
			{Name: argExpiration, Kind: kDuration, Default: "1h", Doc: "Token lifetime, 10m to 24h; over 1h LOOSENS.", Rules: []string{"PDK-602"}},
			{Name: argPath, Kind: kString, Default: "/var/run/secrets/tokens", Doc: "Directory the token file is mounted in."},
		},
	}},
}

var egressSpec = &blockSpec{
	Type: blockEgress,
	Doc:  "Egress of the tenant's sandboxes. Ingress is always denied; egress is denied except what is listed here.",
	Attrs: []attrSpec{
		{Name: argDns, Kind: kBool, Default: "true", Doc: "Allow DNS to the cluster resolver (kube-system/kube-dns) only."},
		{Name: argFqdns, Kind: kStringList, Doc: "Host names sandboxes may reach on TCP 443 (\"api.example.com\", \"*.example.com\"). Needs an FQDN-aware CNI. A wildcard over a public suffix (\"*.co.uk\", \"*.github.io\") is refused.", Rules: []string{"PDK-503", "PDK-504"}},
		{Name: argDefaultDeny, Kind: kBool, Default: "true", Doc: "LOOSENS when false: no default-deny NetworkPolicy at all.", Rules: []string{"PDK-501"}},
	},
	Blocks: []*blockSpec{
		{
			Type: blockAllow, Repeat: true,
			Doc: "A CIDR and port hole in the default deny.",
			Attrs: []attrSpec{
				{Name: argCidr, Kind: kString, Doc: "Destination range, such as \"10.20.0.0/16\".", Rules: []string{"PDK-503", "PDK-504"}},
				{Name: argPorts, Kind: kNumberList, Doc: "Destination ports, such as [443].", Rules: []string{"PDK-502", "PDK-505"}},
				{Name: argProtocol, Kind: kString, Enum: protocols, Default: "TCP", Doc: "Protocol of the ports."},
			},
		},
		{
			Type: blockProxy,
			Doc:  "The egress proxy sandboxes reach the outside through; they get HTTPS_PROXY and HTTP_PROXY.",
			Attrs: []attrSpec{
				{Name: argUrl, Kind: kString, Doc: "The proxy URL, such as \"http://squid.egress.svc.cluster.local:3128\"; its port is the one sandboxes may reach.", Rules: []string{"PDK-502"}},
				{Name: argNamespace, Kind: kString, Doc: "Namespace of the proxy pods (selects them in the NetworkPolicy)."},
				{Name: argPodLabels, Kind: kStringMap, Doc: "Labels of the proxy pods within namespace."},
				{Name: argCidr, Kind: kString, Doc: "Address range of a proxy outside the cluster (instead of namespace).", Rules: []string{"PDK-503", "PDK-504"}},
			},
		},
	},
}

var claimsSpec = &blockSpec{
	Type: blockClaims,
	Doc:  "Lifecycle of every SandboxClaim of the tenant: sessions expire even if the orchestrator forgets.",
	Attrs: []attrSpec{
		{Name: argTtl, Kind: kDuration, Default: "10m", Doc: "How long a finished claim is kept (ttlSecondsAfterFinished); \"none\" LOOSENS.", Rules: []string{"PDK-406"}},
		{Name: argMaxTtl, Kind: kDuration, Default: "4h", Doc: "A session's hard maximum: admission refuses a claim without spec.lifecycle.shutdownTime (RFC 3339) or with one later than max_ttl after its metadata.creationTimestamp, on create and on every update that changes it, and caps spec.lifecycle.ttlSecondsAfterFinished at max_ttl; \"none\" LOOSENS: no maximum and no shutdownTime required.", Rules: []string{"PDK-406"}},
		{Name: argShutdownPolicy, Kind: kString, Enum: shutdownPolicies, Default: "Delete", Doc: "What happens at expiry; anything but Delete LOOSENS.", Rules: []string{"PDK-407"}},
	},
}

var tenantSpec = &blockSpec{
	Type: blockTenant, Label: "name", Name: nameDNSLabel, What: "tenant", Repeat: true,
	Doc: "One trust boundary: its own restricted namespace, quota, identities, network posture, templates and warm pools. With for_each, one tenant per element, named by each.key. " + Limits()[0],
	Attrs: []attrSpec{
		{Name: argForEach, Kind: kAny, Doc: "A map, or a set or list of strings: one tenant per element, named by its key (each.key, each.value)."},
		{Name: argNamespace, Kind: kString, Default: "agents-<tenant>", Doc: "The tenant's namespace."},
		{Name: argPodSecurity, Kind: kString, Enum: podSecurityLevels, Default: "restricted", Doc: "Pod Security Standards level the namespace enforces: \"restricted\", or \"baseline\", which LOOSENS (audit and warn stay at restricted). \"privileged\" is refused: it turns Pod Security admission off.", Rules: []string{"PDK-101"}},
	},
	Blocks: []*blockSpec{quotaSpec, limitRangeSpec, identitySpec, egressSpec, egressGatewaySpec, claimsSpec, templateSpec, warmPoolSpec},
}

var egressGatewaySpec = &blockSpec{
	Type: blockEgressGateway, Rules: []string{"PDK-507", "PDK-611", "PDK-612"},
	Doc: "The tenant's egress gateway: the one route out of its sandboxes to the APIs they may call. It holds the destinations' credentials (no key enters a sandbox), " +
		"resolves each destination itself and refuses private, link-local and cluster addresses, never follows a redirect, and budgets each sandbox. " +
		"Sandboxes call http://<destination>/... with the gateway as their HTTP proxy, http://egress-gateway.<namespace>.svc.cluster.local:8080 (the gateway speaks TLS onwards); NetworkPolicies let only the gateway reach the destinations' ports, and only the sandboxes reach the gateway.",
	Attrs: []attrSpec{
		{Name: argImage, Kind: kString, Default: "target local: the gateway of this Paddock build, built and imported into the node", Doc: "The gateway image (built from cmd/paddock-gateway), by digest: \"registry.example.com/paddock-gateway@sha256:<64 hex digits>\". Required on targets gke and kubeconfig (docs/gcp.md says how to build and push it)."},
		{Name: argReplicas, Kind: kNumber, Default: "1", Doc: "Replicas of the gateway, 1 to 10. Budgets are each replica's."},
		{Name: argCaBundle, Kind: kString, Default: "the system roots of the gateway image", Doc: "PEM certificates of the CAs destination certificates are verified against, instead of the system roots (a private CA's destinations)."},
		{Name: argAllowCidrs, Kind: kStringList, Doc: "Target local only, for test servers: ranges such as \"10.215.0.0/24\" the gateway may reach although they are private, loopback or CGNAT; also opened to the gateway pods on the destinations' ports. Never link-local; the gateway never reopens the cluster's own ranges."},
	},
	Blocks: []*blockSpec{
		{
			Type: blockDestination, Label: "host", Name: nameFree, What: "destination", Repeat: true,
			Doc: "A host sandboxes may call through the gateway, over TLS with its certificate verified. A DNS name: no IP address, no wildcard.",
			Attrs: []attrSpec{
				{Name: argPort, Kind: kNumber, Default: "443", Doc: "The destination's TLS port."},
			},
			Blocks: []*blockSpec{{
				Type: blockCredential,
				Doc:  "The key the gateway injects into every request to the destination, from a Secret of the tenant's namespace that only the gateway mounts. Whatever credential headers a sandbox sends are stripped.",
				Attrs: []attrSpec{
					{Name: argSecret, Kind: kString, Doc: "The Secret's name, in the tenant's namespace."},
					{Name: argKey, Kind: kString, Default: "key", Doc: "The key in the Secret."},
					{Name: argHeader, Kind: kString, Default: "Authorization", Doc: "The request header that carries the key, such as \"x-api-key\"."},
					{Name: argFormat, Kind: kString, Default: `"Bearer {{key}}" for Authorization, "{{key}}" for any other header`, Doc: "The header's value, such as \"Bearer {{key}}\"; {{key}} stands for the key, once."},
				},
			}},
		},
		{
			Type: blockBudgets,
			Doc:  "Each sandbox's limits at the gateway; over them it gets 429 (413 for a request too large) while the tenant's other sandboxes are served.",
			Attrs: []attrSpec{
				{Name: argRequestsPerMinute, Kind: kNumber, Default: "600", Doc: "Requests a minute."},
				{Name: argBytesPerMinute, Kind: kQuantity, Default: "256Mi", Doc: "Bytes a minute, both directions."},
				{Name: argConcurrentRequests, Kind: kNumber, Default: "16", Doc: "Requests in flight at once."},
				{Name: argConnections, Kind: kNumber, Default: "32", Doc: "Open connections to the gateway."},
				{Name: argMaxRequestSize, Kind: kQuantity, Default: "16Mi", Doc: "The largest request body."},
				{Name: argMaxResponseSize, Kind: kQuantity, Default: "64Mi", Doc: "The largest response body."},
			},
		},
	},
}

var runtimeClassSpec = &blockSpec{
	Type: blockRuntimeClass, Label: "name", Name: nameDNSLabel, What: "runtime class", Repeat: true,
	Doc: "A sandbox runtime exposed to the scheduler (gVisor: handler \"runsc\", Kata: \"kata\"), pinned onto the nodes that provide it.",
	Attrs: []attrSpec{
		{Name: argHandler, Kind: kString, Doc: "The runtime configured in containerd on the nodes. On target \"gke\", gVisor is \"gvisor\" (GKE Sandbox creates and owns the RuntimeClass \"gvisor\"; Paddock uses it as it is) and Kata is \"kata\", \"kata-qemu\" or \"kata-clh\" (Paddock installs the pinned kata-deploy on the kvm pools)."},
		{Name: argNodePool, Kind: kString, Doc: "The node_pool that provides the runtime; node_selector and tolerations default to its labels and taints."},
		{Name: argNodeSelector, Kind: kStringMap, Doc: "Node labels sandbox pods are scheduled onto."},
		{Name: argOverhead, Kind: kQuantityMap, Default: `Kata handlers: "kata", "kata-qemu": { cpu = "250m", memory = "320Mi" } (Paddock's conservative figure; kata-deploy 3.20.0 ships 160Mi); "kata-clh": { cpu = "250m", memory = "130Mi" } (kata-deploy's); none otherwise`, Doc: "Pod overhead of the runtime: cpu, memory. A Kata pod is a VM whose VMM and guest kernel the scheduler and quota must count."},
	},
	Blocks: []*blockSpec{tolerationSpec},
}

var nodePoolSpec = &blockSpec{
	Type: blockNodePool, Label: "name", Name: nameDNSLabel, What: "node pool", Repeat: true,
	Doc: "A GKE node pool dedicated to sandboxes (target \"gke\" only).",
	Attrs: []attrSpec{
		{Name: argIsolation, Kind: kString, Enum: isolations, Default: "gvisor", Doc: "\"gvisor\" (GKE Sandbox) or \"kvm\" (nested virtualization for Kata Containers)."},
		{Name: argMachineType, Kind: kString, Default: "e2-standard-4 (kvm: n2-standard-4)", Doc: "The Compute Engine machine type."},
		{Name: argLabels, Kind: kStringMap, Doc: "Extra node labels."},
		{Name: argDedicated, Kind: kBool, Default: "true", Doc: "LOOSENS when false: no dedication taint, so other workloads share the nodes.", Rules: []string{"PDK-701"}},
	},
	Blocks: []*blockSpec{
		{
			Type: blockAutoscaling,
			Doc:  "Node count bounds.",
			Attrs: []attrSpec{
				{Name: argMin, Kind: kNumber, Default: "1", Doc: "Minimum nodes."},
				{Name: argMax, Kind: kNumber, Default: "3", Doc: "Maximum nodes."},
			},
		},
		{
			Type: blockTaint, Repeat: true,
			Doc: "An extra node taint.",
			Attrs: []attrSpec{
				{Name: argKey, Kind: kString, Doc: "The taint key."},
				{Name: argValue, Kind: kString, Doc: "The taint value."},
				{Name: argEffect, Kind: kString, Enum: taintEffects, Default: "NoSchedule", Doc: "The taint effect."},
			},
		},
	},
}

var targetSpec = &blockSpec{
	Type: blockTarget, Label: "kind", Name: nameFree, What: "target kind",
	Doc: "Where the platform goes: \"local\" (the embedded cluster), \"kubeconfig\" (an existing cluster) or \"gke\" (a GKE cluster Paddock creates).",
	Variants: map[string]*blockSpec{
		targetLocal: {Type: blockTarget, Doc: "The embedded local cluster started by `paddock local up` (FQDN policies are CiliumNetworkPolicies, validated by Cilium's CRDs but not enforced: no CNI runs there)."},
		targetKubeconfig: {Type: blockTarget, Doc: "An existing cluster.", Attrs: []attrSpec{
			{Name: argPath, Kind: kString, Default: "$KUBECONFIG, then ~/.kube/config", Doc: "The kubeconfig file."},
			{Name: argContext, Kind: kString, Default: "the current context", Doc: "The kubeconfig context."},
			{Name: argFqdnPolicy, Kind: kString, Enum: []string{"cilium", "none"}, Default: "none", Doc: "How the cluster's CNI enforces FQDN egress allow-lists: \"cilium\" (CiliumNetworkPolicy toFQDNs) or \"none\" (tenants must use an egress proxy instead of fqdns)."},
		}},
		targetGKE: {Type: blockTarget, Doc: "A GKE cluster Paddock creates.", Attrs: []attrSpec{
			{Name: argProject, Kind: kString, Doc: "The Google Cloud project ID."},
			{Name: argLocation, Kind: kString, Doc: "A region (\"europe-west1\", regional cluster) or zone (\"europe-west1-b\")."},
			{Name: argClusterName, Kind: kString, Default: "the platform name", Doc: "The GKE cluster's name."},
		}},
	},
}

// targetKinds is the ordered list of valid target labels, for messages.
var targetKinds = []string{targetLocal, targetKubeconfig, targetGKE}

var clusterSpec = &blockSpec{
	Type: blockCluster,
	Doc:  "Settings of the GKE cluster Paddock creates (target \"gke\" only).",
	Attrs: []attrSpec{
		{Name: argReleaseChannel, Kind: kString, Enum: releaseChannels, Default: "regular", Doc: "The GKE release channel."},
		{Name: argPrivateNodes, Kind: kBool, Default: "true", Doc: "Nodes without public IP addresses; false LOOSENS.", Rules: []string{"PDK-702"}},
		{Name: argAuthorizedNetworks, Kind: kStringList, Doc: "CIDRs allowed to reach the control plane; \"0.0.0.0/0\" LOOSENS.", Rules: []string{"PDK-703"}},
		{Name: argDataplaneV2, Kind: kBool, Default: "true", Doc: "GKE Dataplane V2, which enforces NetworkPolicy; false LOOSENS.", Rules: []string{"PDK-704"}},
		{Name: argWorkloadIdentity, Kind: kBool, Default: "true", Doc: "Workload Identity, which hides node credentials from pods; false LOOSENS.", Rules: []string{"PDK-705"}},
		{Name: argDeletionProtection, Kind: kBool, Default: "true", Doc: "GKE deletion protection: `paddock destroy` cannot delete the cluster while it is on. Set false for throwaway platforms (tests, demos)."},
		{Name: argFqdnNetworkPolicy, Kind: kBool, Default: "false", Doc: "GKE FQDN network policy, which enforces the tenants' egress `fqdns` (needs Dataplane V2); a tenant with `fqdns` needs it on. Sticky: turning it off again makes GKE replace the cluster (refused unless allow_replacement = true); turning it on for an existing cluster needs GKE's anetd restart (docs/gcp.md)."},
		{Name: argAllowReplacement, Kind: kBool, Default: "false", Doc: "Let `preview` and `up` go ahead with a change that makes GCP replace the cluster or a node pool (every node and sandbox on it is lost). Off, such a change is refused, naming the field."},
	},
}

var agentSandboxSpec = &blockSpec{
	Type: blockAgentSandbox,
	Doc:  "The pinned Kubernetes Agent Sandbox release (sigs.k8s.io/agent-sandbox).",
	Attrs: []attrSpec{
		{Name: argVersion, Kind: kString, Doc: "An exact release tag, vMAJOR.MINOR.PATCH."},
		{Name: argImage, Kind: kString, Default: "the release's controller image", Doc: "The controller image, for a mirror; keep the release tag."},
		{Name: argDigest, Kind: kString, Doc: "Pin the controller image by content: \"sha256:<64 hex digits>\"."},
		{Name: argRefillDelay, Kind: kDuration, Default: "0s", Doc: "How long the controller waits, after claims take sandboxes out of a warm pool, before it builds replacements (re-armed while claims keep coming), so a burst of claims is served first; 0s to 10m. The controller's --sandbox-warm-pool-replenish-delay."},
		{Name: argRefillPerMinute, Kind: kNumber, Default: "0", Doc: "At most this many replacement sandboxes a minute per warm pool, so a refill cannot stampede the node pool; 0 builds a pool's whole deficit at once, else 1 to 60000. The controller's --sandbox-warm-pool-max-refill-rate (per second)."},
	},
}

var auditSinkSpec = &blockSpec{
	Type: blockAuditSink, Label: "name", Name: nameDNSLabel, What: "audit sink", Repeat: true,
	Doc: "Ships the audit trail out of the cluster, where a compromised sandbox cannot reach it.",
	Attrs: []attrSpec{
		{Name: argKind, Kind: kString, Enum: auditKinds, Doc: "\"bigquery\", \"storage\" or \"pubsub\"."},
		{Name: argDestination, Kind: kString, Doc: "BigQuery \"project.dataset\", Cloud Storage \"gs://bucket\", or Pub/Sub \"projects/p/topics/t\"."},
		{Name: argFilters, Kind: kStringList, Enum: auditFilters, Default: `["sandbox_lifecycle", "rbac", "pod_logs", "network_drops", "admission"]`, Doc: "What the sink receives: \"sandbox_lifecycle\" (Sandbox and SandboxClaim create and delete, template and warm pool changes), \"rbac\" (Role and RoleBinding changes in the tenant namespaces, ClusterRole and ClusterRoleBinding changes), \"pod_logs\" (sandbox stdout and stderr), \"network_drops\" (denied connections of sandboxes), \"admission\" (writes into tenant namespaces the API server refused)."},
		{Name: argIncludePayloads, Kind: kBool, Default: "false", Doc: "LOOSENS when true: record request and response bodies.", Rules: []string{"PDK-605"}},
	},
}

var observabilitySpec = &blockSpec{
	Type: blockObservability,
	Doc: "Opt-in Prometheus Operator objects in the Agent Sandbox release's namespace: a ServiceMonitor for the controller's metrics and the PrometheusRule \"paddock-alerts\" (sandboxes living far beyond max_ttl, sessions running into max_ttl, tenant quota saturation, empty warm pools, the controller down). " +
		"Without this block nothing is rendered. With it, `paddock up` and `preview` refuse a cluster without the servicemonitors and prometheusrules.monitoring.coreos.com CRDs. " +
		"The quota and lifetime alerts read kube-state-metrics; the lifetime ones need its --metric-labels-allowlist=pods=[agents.x-k8s.io/sandbox-name-hash,agents.x-k8s.io/warm-pool-sandbox].",
	Attrs: []attrSpec{
		{Name: argServiceMonitor, Kind: kBool, Default: "true", Doc: "Render the ServiceMonitor that scrapes the controller's metrics Service. Off, the warm pool and controller alerts need another scrape of that Service as job \"agent-sandbox-controller\"."},
		{Name: argPrometheusRule, Kind: kBool, Default: "true", Doc: "Render the PrometheusRule \"paddock-alerts\"."},
		{Name: argLifetimeFactor, Kind: kFraction, Default: "2", Doc: "Alert when a claimed sandbox has lived longer than this many times its tenant's max_ttl; 1 to 10."},
		{Name: argClaimExpiryRate, Kind: kNumber, Default: "3", Doc: "Alert when at least this many sessions of one tenant ran into max_ttl within an hour (sessions dying mid-work); 1 to 10000."},
		{Name: argQuotaSaturation, Kind: kFraction, Default: "0.9", Doc: "Alert when a tenant uses at least this fraction of any resource of its ResourceQuota; 0.5 to 1."},
		{Name: argQuotaSaturatedFor, Kind: kDuration, Default: "15m", Doc: "How long a tenant's quota must stay at or above quota_saturation before the alert fires; 1m to 24h."},
		{Name: argLifetimeExceededFor, Kind: kDuration, Default: "5m", Doc: "How long a claimed sandbox must stay past lifetime_factor × max_ttl before the alert fires; 1m to 24h."},
		{Name: argPoolEmptyFor, Kind: kDuration, Default: "10m", Doc: "Alert when a warm pool has had no ready sandbox for this long; 1m to 24h."},
		{Name: argControllerDownFor, Kind: kDuration, Default: "5m", Doc: "Alert when the controller's metrics endpoint has been down for this long; 1m to 24h."},
		{Name: argLabels, Kind: kStringMap, Doc: "Labels of both objects, for the Prometheus Operator's serviceMonitorSelector and ruleSelector (kube-prometheus-stack: { release = \"<its release name>\" })."},
	},
}

var waiverSpec = &blockSpec{
	Type: blockWaiver, Repeat: true,
	Doc: "An explicit, reasoned exception to one policy rule. Every report shows it; an expired one fails.",
	Attrs: []attrSpec{
		{Name: argRule, Kind: kString, Doc: "The rule ID, such as \"PDK-306\"."},
		{Name: argReason, Kind: kString, Doc: "Why the exception is acceptable."},
		{Name: argExpires, Kind: kString, Doc: "Last day the waiver holds, YYYY-MM-DD."},
		{Name: argScope, Kind: kString, Doc: "Limit the waiver to one object, by address: \"tenant.team-a\", \"tenant.team-a.template.python\"."},
	},
}

var trustAdmissionSpec = &blockSpec{
	Type: blockTrustAdmission, Label: "name", What: "trusted admission object", Repeat: true,
	Doc: "Trusts one mutating admission object, by its exact kind and name, to rewrite what the platform guards (a service mesh's sidecar injector, say): " +
		"the drift sweep's S09 no longer reports it, and what it adds to an object Paddock applies is not drift. Like a waiver it is shown in every report, with its reason; " +
		"one that no longer exists in the cluster is reported. Trust is by name: the object's rules and selectors are not pinned, so whoever can edit it can widen what it rewrites (S09 and `paddock drift` say what it reaches).",
	Attrs: []attrSpec{
		{Name: argKind, Kind: kString, Enum: model.AdmissionKinds, Doc: "\"MutatingWebhookConfiguration\" or \"MutatingAdmissionPolicy\"."},
		{Name: argReason, Kind: kString, Doc: "Why the object may rewrite what the platform guards."},
	},
}

var variableSpec = &blockSpec{
	Type: blockVariable, Label: "name", Name: nameIdentifier, What: "variable", Repeat: true,
	Doc: "An input of the spec, referenced as var.<name>. Values come from -var, --var-file, *.auto.pvars.hcl files and PADDOCK_VAR_<name>.",
	Attrs: []attrSpec{
		{Name: argType, Kind: kType, Default: "any", Doc: "A type constraint: string, number, bool, list(string), map(string), object({...})."},
		{Name: argDefault, Kind: kAny, Doc: "The value when none is given; without it the variable is required."},
		{Name: argDescription, Kind: kString, Doc: "What the variable is for."},
		{Name: argSensitive, Kind: kBool, Default: "false", Doc: "Never show the value in diagnostics, reports or output. A sensitive value must not reach a name, namespace or label, which Kubernetes shows everywhere.", Rules: []string{"PDK-610"}},
	},
	Blocks: []*blockSpec{{
		Type: blockValidation, Repeat: true,
		Doc: "A condition the value must meet.",
		Attrs: []attrSpec{
			{Name: argCondition, Kind: kBool, Doc: "An expression over var.<name> that must be true."},
			{Name: argErrorMessage, Kind: kString, Doc: "The error when it is false."},
		},
	}},
}

var localsSpec = &blockSpec{
	Type: blockLocals, Repeat: true, AnyAttrs: true,
	Doc: "Named values computed once, referenced as local.<name>.",
}

var platformSpec = &blockSpec{
	Type:  blockPlatform,
	Doc:   "The platform's name, which labels every object Paddock creates.",
	Attrs: []attrSpec{{Name: argName, Kind: kString, Doc: "A DNS label."}},
}

// rootSpec is the top level of a spec file.
var rootSpec = &blockSpec{
	Blocks: []*blockSpec{
		variableSpec, localsSpec, platformSpec, targetSpec, clusterSpec, nodePoolSpec,
		agentSandboxSpec, runtimeClassSpec, tenantSpec, auditSinkSpec, observabilitySpec, waiverSpec,
		trustAdmissionSpec,
	},
}

// Enumerations.
var (
	tolerationOperators = []string{"Equal", "Exists"}
	taintEffects        = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	protocols           = []string{"TCP", "UDP", "SCTP"}
	shutdownPolicies    = []string{"Delete", "DeleteForeground", "Retain"}
	podSecurityLevels   = []string{"restricted", "baseline"}
	isolations          = []string{"gvisor", "kvm"}
	releaseChannels     = []string{"rapid", "regular", "stable"}
	auditKinds          = []string{"bigquery", "storage", "pubsub"}
	auditFilters        = []string{"sandbox_lifecycle", "rbac", "pod_logs", "network_drops", "admission"}
	workspaceKinds      = []string{"ephemeral", "persistent"}
)
