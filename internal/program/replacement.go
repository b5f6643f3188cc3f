package program

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	gcplayer "github.com/paddock-platform/paddock/components/gcp"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/replacement"
	"github.com/paddock-platform/paddock/internal/model"
)

// The GKE resources whose replacement the guard refuses.
const (
	clusterType  = "gcp:container/cluster:Cluster"
	nodePoolType = "gcp:container/nodePool:NodePool"
)

// Replacement is one resource GCP would replace, and why.
type Replacement struct {
	Type, Name string
	// Change is the input that forces it; empty Path for a renamed cluster.
	Change replacement.Change
	// SpecField is the spec argument behind the input, when there is one.
	SpecField string
}

func (r Replacement) String() string {
	what := "cluster"
	if r.Type == nodePoolType {
		what = "node pool"
	}
	s := fmt.Sprintf("%s %s: %s", what, r.Name, r.Change.Describe())
	if r.SpecField != "" {
		s += " (spec: " + r.SpecField + ")"
	}
	return s
}

// ReplacementError refuses a change that makes GCP replace the cluster or a
// node pool, which the spec has not allowed.
type ReplacementError struct{ Replacements []Replacement }

func (e *ReplacementError) Error() string {
	var b strings.Builder
	b.WriteString("this change makes GCP replace the cluster or a node pool:\n")
	for _, r := range e.Replacements {
		b.WriteString("  - " + r.String() + "\n")
	}
	b.WriteString("A replaced cluster loses every node, sandbox and object in it (and the update fails " +
		"while deletion protection is on); a replaced node pool loses every sandbox on it. " +
		"Revert the change, or set cluster { allow_replacement = true } in the spec to let it happen.")
	return b.String()
}

// GuardReplacements compares the GKE cluster and node pools the stack's state
// recorded (state, as `pulumi stack export` gives it) with those the program
// registers for p now, input by input, against the pinned provider's
// replacement rules (internal/gcpinputs/replacement): a pure comparison, made
// before the engine runs, that needs no GCP. It returns a *ReplacementError
// for a replacement the spec does not allow (cluster { allow_replacement }),
// and notices for what the update itself cannot do (the anetd restart that
// FQDN network policy needs on an existing cluster, an allowed replacement).
//
// A value the comparison cannot know (a secret in the state) is skipped.
func GuardReplacements(p *model.Platform, state apitype.UntypedDeployment) (notices []string, err error) {
	if p.Target.Kind != model.TargetGKE {
		return nil, nil
	}
	schema, err := replacement.Load()
	if err != nil {
		return nil, err
	}
	old, err := recordedGKEInputs(state)
	if err != nil {
		return nil, err
	}
	if len(old) == 0 {
		return nil, nil // nothing created yet
	}
	now, err := registeredGKEInputs(p)
	if err != nil {
		return nil, err
	}

	var found []Replacement
	oldCluster, newCluster := only(old, clusterType), only(now, clusterType)
	if oldCluster != "" && newCluster != "" && oldCluster != newCluster {
		found = append(found, Replacement{Type: clusterType, Name: oldCluster, SpecField: "target.cluster_name",
			Change: replacement.Change{Path: "name", Old: oldCluster, New: newCluster}})
	}
	for _, k := range sortedKeys(now) {
		prev, ok := old[k]
		if !ok {
			continue // a new resource, or a renamed one: the spec says so
		}
		// What the program tells Pulumi to ignore never reaches the provider.
		ignored := gcplayer.ClusterIgnoreChanges
		if k.typ == nodePoolType {
			ignored = gcplayer.NodePoolIgnoreChanges
		}
		prev, cur := without(prev, ignored), without(now[k], ignored)
		for _, c := range schema.Replacements(k.typ, prev, cur) {
			found = append(found, Replacement{Type: k.typ, Name: k.name, Change: c, SpecField: specField(k, c.Path)})
		}
		if k.typ == clusterType {
			if o, _ := replacement.Lookup(prev, "enableFqdnNetworkPolicy"); o != true {
				if n, _ := replacement.Lookup(cur, "enableFqdnNetworkPolicy"); n == true {
					notices = append(notices, fmt.Sprintf("cluster %s: FQDN network policy turns on for an existing cluster. GKE enforces it only once anetd has restarted: "+
						"run `kubectl -n kube-system rollout restart daemonset anetd` after this update; until then the tenants' fqdns let nothing through (docs/gcp.md).", k.name))
				}
			}
		}
	}
	if len(found) == 0 {
		return notices, nil
	}
	if p.Cluster != nil && p.Cluster.AllowReplacement {
		for _, r := range found {
			notices = append(notices, "allowed by cluster.allow_replacement, GCP replaces "+r.String())
		}
		return notices, nil
	}
	return notices, &ReplacementError{Replacements: found}
}

// specField is the spec argument behind a replacing input, when the spec has one.
func specField(k resKey, path string) string {
	if k.typ == clusterType {
		return map[string]string{
			"name": "target.cluster_name", "project": "target.project", "location": "target.location",
			"enableFqdnNetworkPolicy":                 "cluster.fqdn_network_policy",
			"privateClusterConfig.enablePrivateNodes": "cluster.private_nodes",
			"datapathProvider":                        "cluster.dataplane_v2",
		}[path]
	}
	pool := k.name[strings.LastIndexByte(k.name, '/')+1:]
	switch {
	case strings.HasPrefix(path, "nodeConfig.sandboxConfig."), path == "nodeConfig.advancedMachineFeatures.enableNestedVirtualization":
		return "node_pool." + pool + ".isolation"
	case path == "name":
		return "node_pool." + pool
	}
	return ""
}

type resKey struct{ typ, name string }

// without is m less the top-level inputs names.
func without(m map[string]any, names []string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func sortedKeys(m map[resKey]map[string]any) []resKey {
	keys := make([]resKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].name < keys[j].name
	})
	return keys
}

// only is the name of the one resource of typ in m ("" for none).
func only(m map[resKey]map[string]any, typ string) string {
	for k := range m {
		if k.typ == typ {
			return k.name
		}
	}
	return ""
}

// secretSig marks a secret value in a deployment's JSON.
const secretSig = "4dabf18193072939515e22adb298388d"

// recordedGKEInputs are the inputs the stack's state recorded for its GKE
// cluster and node pools, by type and name (resources pending deletion left
// out; secrets unknown).
func recordedGKEInputs(state apitype.UntypedDeployment) (map[resKey]map[string]any, error) {
	out := map[resKey]map[string]any{}
	if len(state.Deployment) == 0 {
		return out, nil
	}
	if state.Version != 3 {
		return nil, fmt.Errorf("stack state version %d: the replacement guard reads version 3", state.Version)
	}
	var d apitype.DeploymentV3
	if err := json.Unmarshal(state.Deployment, &d); err != nil {
		return nil, fmt.Errorf("reading the stack state: %w", err)
	}
	for _, r := range d.Resources {
		typ := string(r.Type)
		if r.Delete || (typ != clusterType && typ != nodePoolType) {
			continue
		}
		in, _ := unwrapSecrets(map[string]any(r.Inputs)).(map[string]any)
		if in == nil {
			in = map[string]any{}
		}
		out[resKey{typ, r.URN.Name()}] = in
	}
	return out, nil
}

func unwrapSecrets(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[secretSig]; ok {
			return replacement.Unknown
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = unwrapSecrets(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unwrapSecrets(e)
		}
		return out
	}
	return v
}

// registeredGKEInputs are the inputs the program registers for p's GKE
// cluster and node pools, by type and name: the program runs in-process
// against a recording resource monitor, so these are the very inputs `up`
// would send.
func registeredGKEInputs(p *model.Platform) (map[resKey]map[string]any, error) {
	rec := &inputRecorder{inputs: map[resKey]map[string]any{}}
	if err := pulumi.RunErr(New(p), pulumi.WithMocks("paddock", "replacement-guard", rec)); err != nil {
		return nil, fmt.Errorf("evaluating the program: %w", err)
	}
	return rec.inputs, nil
}

// inputRecorder is a resource monitor that records the inputs of the GKE
// resources and answers every registration with its inputs as its state.
// The one GCP-computed output the cluster's and pools' inputs read is the
// node service account's email, which GCP derives from the account id and
// project (spec.ServiceAccountEmail); it is given here, and everything else
// a provider computes is left empty.
type inputRecorder struct {
	mu     sync.Mutex
	inputs map[resKey]map[string]any
}

func (r *inputRecorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	state := args.Inputs.Copy()
	switch args.TypeToken {
	case clusterType, nodePoolType:
		r.mu.Lock()
		r.inputs[resKey{args.TypeToken, args.Name}] = plainMap(args.Inputs)
		r.mu.Unlock()
	case "gcp:serviceaccount/account:Account":
		id, project := state["accountId"], state["project"]
		if id.IsString() && project.IsString() {
			email := gcpinputs.ServiceAccountEmail(id.StringValue(), project.StringValue())
			state["email"] = resource.NewStringProperty(email)
			state["member"] = resource.NewStringProperty("serviceAccount:" + email)
		}
	}
	return args.Name + "-id", state, nil
}

func (r *inputRecorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func plainMap(m resource.PropertyMap) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[string(k)] = plain(v)
	}
	return out
}

func plain(v resource.PropertyValue) any {
	switch {
	case v.IsComputed():
		return replacement.Unknown
	case v.IsOutput():
		if o := v.OutputValue(); o.Known {
			return plain(o.Element)
		}
		return replacement.Unknown
	case v.IsSecret():
		return plain(v.SecretValue().Element)
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.BoolValue()
	case v.IsNumber():
		return v.NumberValue()
	case v.IsString():
		return v.StringValue()
	case v.IsArray():
		arr := v.ArrayValue()
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = plain(e)
		}
		return out
	case v.IsObject():
		return plainMap(v.ObjectValue())
	}
	return replacement.Unknown // assets, archives, resource references
}
