package converge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/targets"
)

// Plan is the declared objects paired with their state.
type Plan struct {
	Objects []*Object
	Outputs map[string]any
	// Kubeconfig is the one the stack's kubernetes provider recorded, read
	// for a cluster the stack creates (stackCluster); never printed.
	Kubeconfig string
	// Digest is the checkpoint's, as the engine's stateDigest gives it.
	Digest string
}

// PlanObjects is the part of the engine's plan that reads the checkpoint
// data (once the engine has found the state readable, the stack unlocked
// and no run dead): it pairs each declared object with its state; reason is
// "" when the comparison may go on. stackCluster: a cluster the stack itself
// creates (GKE), see the engine's stackClusterPlan. passphrase reads the
// stack's secrets passphrase, only when a secret is met.
func PlanObjects(ctx context.Context, data []byte, p *model.Platform, stackCluster bool, passphrase func() (string, error)) (*Plan, string) {
	fail := func(reason string) (*Plan, string) { return nil, reason }
	cp, err := ParseCheckpoint(data)
	if err != nil {
		return fail("the state does not parse")
	}
	latest := cp.Checkpoint.Latest
	if latest == nil || len(latest.Resources) == 0 {
		return fail("the stack has no resources yet")
	}
	if len(latest.PendingOperations) > 0 {
		return fail("the state holds operations an earlier run never finished")
	}
	newCrypter := stateCrypter(ctx, latest.SecretsProviders, passphrase)

	built, err := manifests.Build(p)
	if err != nil {
		return fail("the spec's objects do not build: " + oneLine(err))
	}
	sensitive := p.SensitiveValues()
	declared := map[string]*Object{}
	var order []*Object
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			key := TypeToken(u.GetAPIVersion(), u.GetKind()) + "::" + ObjectKey(u)
			if _, dup := declared[key]; dup {
				return fail("the spec declares " + key + " twice")
			}
			o := &Object{Desired: u, GVR: GVROf(u)}
			declared[key] = o
			order = append(order, o)
		}
	}

	var provider *StateResource
	outputs := map[string]any{}
	seen := map[string]bool{}
	for i := range latest.Resources {
		r := &latest.Resources[i]
		if r.Delete || r.PendingReplacement {
			return fail("the state holds a resource waiting to be deleted or replaced")
		}
		switch {
		case r.Type == "pulumi:pulumi:Stack":
			for k, v := range r.Outputs {
				if IsSecret(v) {
					v = SecretValue
				}
				outputs[k] = v
			}
			continue
		case strings.HasPrefix(r.Type, "paddock:"):
			continue // components and the stack hold no cluster object
		case r.Type == "pulumi:providers:kubernetes":
			if provider != nil {
				return fail("the stack holds more than one kubernetes provider")
			}
			provider = r
			continue
		case strings.HasPrefix(r.Type, "gcp:") || r.Type == "pulumi:providers:gcp":
			if stackCluster {
				continue // the engine's refresh compares them
			}
			return fail("the stack holds GCP resources")
		case !strings.HasPrefix(r.Type, "kubernetes:"):
			return fail("the stack holds a " + r.Type + " resource the fast path does not read")
		}
		key := r.Type + "::" + urnName(r.URN)
		o := declared[key]
		if o == nil && stackCluster && CloudLayerURN(r.URN) {
			continue // registered by the cloud layer, not the spec's: the engine compares it
		}
		if o == nil {
			return fail("the spec no longer declares " + describeKey(key))
		}
		if seen[key] {
			return fail("the state holds " + describeKey(key) + " twice")
		}
		seen[key] = true
		o.State = r
	}
	if provider == nil {
		return fail("the stack holds no kubernetes provider")
	}
	var kubeconfig string
	if stackCluster {
		if !CloudLayerURN(provider.URN) {
			return fail("the stack's kubernetes provider is not its GKE cluster's (the target changed since the last up)")
		}
		kc, err := recordedKubeconfig(ctx, provider, newCrypter)
		if err != nil {
			return fail(err.Error())
		}
		kubeconfig = kc
	} else if why := providerChanged(ctx, provider, p, outputs, newCrypter); why != "" {
		return fail(why)
	}
	providerRef := provider.URN + "::" + provider.ID
	for _, o := range order {
		key := TypeToken(o.Desired.GetAPIVersion(), o.Desired.GetKind()) + "::" + ObjectKey(o.Desired)
		if o.State == nil {
			return fail("the spec adds " + describeKey(key))
		}
		if o.State.Provider != providerRef {
			return fail(describeKey(key) + " belongs to another provider")
		}
		inputs, err := decryptSecrets(ctx, o.State.Inputs, newCrypter)
		if err != nil {
			return fail("a secret of the state does not decrypt: " + oneLine(err))
		}
		want := markSecrets(comparableInputs(o.Desired.Object), sensitive)
		if !inputsEqual(want, comparableInputs(inputs.(map[string]any))) {
			return fail("the spec changed " + describeKey(key) + " since the last up")
		}
	}
	sum := sha256.Sum256(data)
	return &Plan{Objects: order, Outputs: outputs, Kubeconfig: kubeconfig, Digest: hex.EncodeToString(sum[:])}, ""
}

// StackClusterKubeconfig is the kubeconfig the GKE layer's kubernetes
// provider recorded in the checkpoint data, decrypted in memory (passphrase
// reads the stack's passphrase); "" when there is none to read: no such
// provider, or a checkpoint that does not parse.
func StackClusterKubeconfig(ctx context.Context, data []byte, passphrase func() (string, error)) (string, error) {
	cp, err := ParseCheckpoint(data)
	if err != nil || cp.Checkpoint.Latest == nil {
		return "", nil
	}
	latest := cp.Checkpoint.Latest
	for i := range latest.Resources {
		r := &latest.Resources[i]
		if r.Type != "pulumi:providers:kubernetes" || !CloudLayerURN(r.URN) {
			continue
		}
		kubeconfig, err := recordedKubeconfig(ctx, r, stateCrypter(ctx, latest.SecretsProviders, passphrase))
		if err != nil {
			if errors.Is(err, errNoRecordedKubeconfig) {
				return "", nil
			}
			return "", fmt.Errorf("reading the kubeconfig of the stack's GKE cluster from its state: %w", err)
		}
		return kubeconfig, nil
	}
	return "", nil
}

// CloudLayerURN reports whether a resource was registered inside the GCP
// layer (components/gcp: its URN's type runs through a paddock:gcp:
// component), as its kubernetes provider, Kata's installer and GKE's network
// logging are; the spec's objects are registered under paddock:index:Platform.
func CloudLayerURN(urn string) bool {
	parts := strings.SplitN(urn, "::", 4)
	return len(parts) == 4 && strings.Contains(parts[2], "paddock:gcp:")
}

// recordedKubeconfig is the kubeconfig the stack's kubernetes provider was
// given, decrypted when the state holds it as a secret.
func recordedKubeconfig(ctx context.Context, r *StateResource, newCrypter func() (config.Crypter, error)) (string, error) {
	in, err := decryptSecrets(ctx, r.Inputs, newCrypter)
	if err != nil {
		return "", errors.New("a secret of the state does not decrypt: " + oneLine(err))
	}
	v := in.(map[string]any)["kubeconfig"]
	if sv, ok := v.(secret); ok {
		v = sv.value
	}
	kc, _ := v.(string)
	if kc == "" {
		return "", errNoRecordedKubeconfig
	}
	return kc, nil
}

// errNoRecordedKubeconfig: the last up did not get as far as the cluster.
var errNoRecordedKubeconfig = errors.New("the stack's kubernetes provider records no kubeconfig yet")

// providerChanged says how the kubernetes provider's recorded settings
// differ from the ones the program would give it, or "". A kubeconfig at
// another path (another runner's, or the same file moved) is no change
// when the cluster the last engine run recorded (targets.ClusterOutput, in
// outputs) is the one this kubeconfig reaches: same server, same CA.
func providerChanged(ctx context.Context, r *StateResource, p *model.Platform, outputs map[string]any, newCrypter func() (config.Crypter, error)) string {
	in, err := decryptSecrets(ctx, r.Inputs, newCrypter)
	if err != nil {
		return "a secret of the state does not decrypt: " + oneLine(err)
	}
	want := map[string]any{"kubeconfig": p.Target.Kubeconfig, "enableServerSideApply": "true"}
	if p.Target.Context != "" {
		want["context"] = p.Target.Context
	}
	got := map[string]any{}
	for k, v := range in.(map[string]any) {
		if k == "version" || strings.HasPrefix(k, "__") {
			continue // the plugin's version, pinned with the CLI; the engine's own keys
		}
		if s, ok := v.(secret); ok {
			v = s.value
		}
		if b, ok := v.(bool); ok {
			v = fmt.Sprint(b)
		}
		got[k] = v
	}
	if reflect.DeepEqual(want, got) {
		return ""
	}
	const changed = "the kubernetes provider's settings (kubeconfig, context) changed"
	if _, isPath := got["kubeconfig"].(string); !isPath {
		return changed
	}
	got["kubeconfig"] = want["kubeconfig"]
	if !reflect.DeepEqual(want, got) {
		return changed // more than the kubeconfig's path
	}
	recorded, ok := targets.ClusterIdentityOf(outputs[targets.ClusterOutput])
	if !ok {
		return "the kubeconfig's path changed and the state records no cluster identity to compare (the next full up records it)"
	}
	current, err := targets.KubeconfigCluster(p.Target.Kubeconfig, p.Target.Context)
	if err != nil {
		return "the kubeconfig's path changed and its cluster cannot be told: " + oneLine(err)
	}
	if current != recorded {
		return fmt.Sprintf("the kubeconfig reaches another cluster than the last up (%s, CA %.12s; the state records %s, CA %.12s)", current.Server, current.CASHA256, recorded.Server, recorded.CASHA256)
	}
	return ""
}
