package schemas

import "github.com/hashicorp/hcl/v2"

// Block type names of the spec language.
const (
	blockPlatform     = "platform"
	blockTarget       = "target"
	blockAgentSandbox = "agent_sandbox"
	blockRuntimeClass = "runtime_class"
	blockToleration   = "toleration"
	blockTenant       = "tenant"
	blockTemplate     = "template"
	blockResources    = "resources"
	blockWarmPool     = "warm_pool"
	blockWaiver       = "waiver"
)

// Target kinds, the label of a target block.
const (
	targetLocal      = "local"
	targetKubeconfig = "kubeconfig"
)

// Keys of the requests and limits objects of a resources block.
const (
	resourceCPU              = "cpu"
	resourceMemory           = "memory"
	resourceEphemeralStorage = "ephemeral_storage"
)

var resourceKeys = []string{resourceCPU, resourceMemory, resourceEphemeralStorage}

// The schemas below only declare which blocks and arguments exist. Whether an
// argument is required is checked while building (build.go), so that the
// message can say what to write instead of HCL's generic one.

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockPlatform},
		{Type: blockTarget, LabelNames: []string{"kind"}},
		{Type: blockAgentSandbox},
		{Type: blockRuntimeClass, LabelNames: []string{"name"}},
		{Type: blockTenant, LabelNames: []string{"name"}},
		{Type: blockWaiver},
	},
}

var platformSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "name"}},
}

var targetSchemas = map[string]*hcl.BodySchema{
	targetLocal: {},
	targetKubeconfig: {
		Attributes: []hcl.AttributeSchema{{Name: "path"}, {Name: "context"}},
	},
}

// targetKinds is the ordered list of valid target labels, for messages.
var targetKinds = []string{targetLocal, targetKubeconfig}

var agentSandboxSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "version"}, {Name: "image"}},
}

var runtimeClassSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "handler"}, {Name: "node_selector"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: blockToleration}},
}

var tolerationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "key"}, {Name: "operator"}, {Name: "value"}, {Name: "effect"},
	},
}

var tenantSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "namespace"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockTemplate, LabelNames: []string{"name"}},
		{Type: blockWarmPool, LabelNames: []string{"name"}},
	},
}

var templateSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "image"},
		{Name: "command"},
		{Name: "args"},
		{Name: "runtime_class"},
		{Name: "run_as_user"},
		{Name: "tmp_size"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: blockResources}},
}

var resourcesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "requests"}, {Name: "limits"}},
}

var warmPoolSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "template"}, {Name: "replicas"}},
}

var waiverSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "rule"}, {Name: "reason"}, {Name: "expires"}},
}
