package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/state"
	"github.com/paddock-platform/paddock/internal/targets"
)

// This file is the fast path of a no-op `up` and of `drift`. When the spec
// is exactly what the stack last applied, the only thing that can differ is
// the cluster, and that is read with one label-selected LIST per kind rather
// than one GET per resource plus the engine's work per resource. Anything
// the fast path cannot vouch for (a spec change, a lock, a dead run, a
// backend or target it cannot read) is left to the Pulumi engine, and the
// caller says why in one line.

// fastResult is what the fast comparison found.
type fastResult struct {
	// Report lists the objects that differ from the cluster (Modified,
	// Missing), with Checked and Compare set.
	Report *drift.Report
	// Requests counts what the comparison asked the API server.
	Lists, Gets, DryRuns int
	// Outputs are the stack's outputs as the last up left them, secrets
	// redacted.
	Outputs map[string]any

	objs    []*fastObject
	clients *clusterClients
	// stateDigest is the digest of the checkpoint the comparison read
	// (stateDigest), to tell a state written since.
	stateDigest string
}

// fastUp answers an up whose spec is what the stack last applied without
// the engine: a platform that matches is confirmed, and objects changed out
// of band are repaired in place (repairLive). It returns nil when the engine
// must run (it says why): a spec change, or an object deleted out of band.
func (e *Engine) fastUp(ctx context.Context, p *model.Platform) (*Result, error) {
	if e.opts.Full {
		return nil, nil
	}
	start := time.Now()
	res, reason, err := e.fastCheck(ctx, p)
	if err != nil {
		return nil, nil // cancelled: the engine's run reports it
	}
	if reason == "" {
		for _, r := range res.Report.Resources {
			if r.Change == drift.Missing {
				reason = r.Title() + " was deleted from the cluster"
				break
			}
		}
	}
	if reason != "" {
		fmt.Fprintf(e.opts.Out, "paddock up: full run: %s\n", reason)
		return nil, nil
	}
	return e.fastRepair(ctx, p, res, start)
}

// fastRepair is fastUp once the comparison found nothing the engine must
// do: it repairs what drifted under the stack's lock, or returns nil (saying
// why) for the engine to run.
func (e *Engine) fastRepair(ctx context.Context, p *model.Platform, res *fastResult, start time.Time) (*Result, error) {
	e.keepTrusted("up", p, res)
	if len(res.Report.Resources) > 0 {
		release, holder, lerr := e.lockForRepair(e.stackName(p))
		switch {
		case lerr != nil:
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack's lock: %s\n", oneLine(lerr))
			return nil, nil
		case release == nil:
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack is locked by another run (%s)\n", holder)
			return nil, nil
		}
		defer release()
		// The comparison was made before the lock: another run may have
		// applied another spec since, and repairing from this comparison
		// would write this spec's objects back over it. The engine's run
		// then applies this spec under Pulumi's lock, as any up does.
		if now, err := e.stateDigest(e.stackName(p)); err != nil || now != res.stateDigest {
			fmt.Fprintf(e.opts.Out, "paddock up: full run: the stack's state changed after it was compared with the cluster (another run wrote it)\n")
			return nil, nil
		}
	}
	repaired, err := e.repairLive(ctx, "up", res)
	if err == nil && repaired > 0 {
		err = e.confirmRepaired(ctx, res.clients, p, e.stackName(p), res)
	}
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	out := &Result{
		Stack:    e.stackName(p),
		Changes:  map[string]int{"same": res.Report.Checked - repaired},
		Duration: took,
		Outputs:  res.Outputs,
		Message:  fmt.Sprintf("nothing changed: %d unchanged, checked live in %.1fs", res.Report.Checked, took.Seconds()),
	}
	if repaired > 0 {
		out.Changes["repaired"] = repaired
		out.Message = fmt.Sprintf("repaired %d object(s) changed out of band, %d unchanged, checked live in %.1fs", repaired, res.Report.Checked-repaired, took.Seconds())
	}
	return out, nil
}

// fastDrift answers drift without the engine, or returns nil (saying why)
// for the engine's refresh-and-preview to answer.
func (e *Engine) fastDrift(ctx context.Context, p *model.Platform) *drift.Report {
	if e.opts.Full {
		return nil
	}
	res, reason, err := e.fastCheck(ctx, p)
	if err != nil {
		return nil
	}
	if reason != "" {
		fmt.Fprintf(e.opts.Out, "paddock drift: full run: %s\n", reason)
		return nil
	}
	fmt.Fprintf(e.opts.Out, "paddock drift: compared %d objects live (%d lists, %d gets, %d dry-runs) in %.2fs\n",
		res.Report.Checked, res.Lists, res.Gets, res.DryRuns, res.Report.Compare.Seconds())
	return res.Report
}

// fastWorkers bounds the fast path's requests in flight (one LIST per kind
// plus the dry-runs; the rate limit is clusterQPS).
const fastWorkers = 16

// fastObject is one declared object with its state and live counterparts.
type fastObject struct {
	desired *unstructured.Unstructured
	state   *stateResource
	gvr     schema.GroupVersionResource
	live    *unstructured.Unstructured // nil: missing or being deleted
	// expected is the desired object as the server stores it; diffs how
	// live differs from it; immutable, when set, why it cannot be updated
	// in place.
	expected  map[string]any
	diffs     []drift.Field
	immutable string
}

// fastCheck decides whether the fast path may answer for platform p and, if
// so, compares the live cluster with it. reason is "" when it answered, else
// one line saying why the engine must run; err is only a cancelled context.
func (e *Engine) fastCheck(ctx context.Context, p *model.Platform) (*fastResult, string, error) {
	start := time.Now()
	name := e.stackName(p)
	plan, reason := e.fastObjectPlan(ctx, p, name)
	if reason != "" {
		return nil, reason, ctx.Err()
	}
	objs, outputs := plan.objs, plan.outputs
	c, err := clientsFor(p)
	if err != nil {
		return nil, "the cluster's kubeconfig does not load: " + oneLine(err), nil
	}
	res, err := e.compareWhole(ctx, c, p, name, objs, formsCached)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "reading the live platform failed: " + oneLine(err), nil
	}
	res.Report.Platform, res.Report.Stack, res.Report.Target = p.Name, name, string(p.Target.Kind)
	res.Report.Compare = time.Since(start)
	res.Outputs = outputs
	res.stateDigest = plan.digest
	return res, "", nil
}

// formsUse says how a comparison uses the cache of stored forms.
type formsUse int

const (
	formsCached    formsUse = iota // every declared object: cached forms, the cache keeps only theirs
	formsRecompute                 // every declared object: ask the server for every form
	formsSubset                    // some objects: cached forms, the cache keeps the others too
)

// compareWhole compares the live objects with objs whole (compareLive),
// with the stack's cache of stored forms. It keeps the objects and client on
// the result for a repair.
func (e *Engine) compareWhole(ctx context.Context, c *clusterClients, p *model.Platform, name string, objs []*fastObject, use formsUse) (*fastResult, error) {
	return e.compareWholeWith(ctx, c, p, name, objs, use, nil)
}

// compareWholeWith is compareWhole taking the stored forms of the objects a
// run created from their creations (created.go) where it can.
func (e *Engine) compareWholeWith(ctx context.Context, c *clusterClients, p *model.Platform, name string, objs []*fastObject, use formsUse, created *creations) (*fastResult, error) {
	v, err := c.disco.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the API server's version: %w", err)
	}
	// A stored form is what admission made of an object: the cache holds only
	// while the cluster's mutating admission is what it was when it was kept.
	admission, err := drift.AdmissionFingerprint(ctx, c.kube)
	if err != nil {
		return nil, err
	}
	forms := e.loadStoredForms(name, v.GitVersion+" mutating admission "+admission, use == formsRecompute, use != formsSubset)
	forms.created = created
	res, err := compareLive(ctx, c.dyn, p.Name, objs, forms, p.SensitiveValues())
	if err != nil {
		return nil, err
	}
	if err := forms.save(); err != nil {
		fmt.Fprintf(e.opts.Out, "paddock: the cache of stored forms was not saved (%s); the next run asks the server again\n", oneLine(err))
	}
	res.objs, res.clients = objs, c
	return res, nil
}

// fastPlan checks everything that can be checked without the cluster and
// pairs each declared object with its state. reason is "" when the fast path
// may go on.
func (e *Engine) fastPlan(ctx context.Context, p *model.Platform, name string) ([]*fastObject, map[string]any, string) {
	plan, reason := e.fastObjectPlan(ctx, p, name)
	if reason != "" {
		return nil, nil, reason
	}
	return plan.objs, plan.outputs, ""
}

// fastObjectPlan is fastPlan's plan whole, with the digest of the state it
// read.
func (e *Engine) fastObjectPlan(ctx context.Context, p *model.Platform, name string) (*objectPlan, string) {
	switch {
	case p.Target.Kind == model.TargetGKE:
		return nil, "the target is GKE, whose cloud resources only the engine reads"
	case p.Target.Kubeconfig == "":
		return nil, "the target has no kubeconfig"
	}
	return e.planObjects(ctx, p, name, false)
}

// objectPlan is the declared objects paired with their state.
type objectPlan struct {
	objs    []*fastObject
	outputs map[string]any
	// kubeconfig is the one the stack's kubernetes provider recorded, read
	// for a cluster the stack creates (stackCluster); never printed.
	kubeconfig string
	// digest is the checkpoint's, as stateDigest gives it.
	digest string
}

// stackClusterPlan is planObjects for the engine's path on a cluster the
// stack itself creates (GKE): after Pulumi's refresh has read the cloud
// resources, the Kubernetes objects of the spec are compared whole like
// anywhere else, on the cluster the stack's kubernetes provider reaches
// (the GCP layer's provider, through the kubeconfig it recorded:
// clientsFromKubeconfig). The GCP resources, and the Kubernetes objects only
// the cloud layer registers (Kata's installer, GKE's network logging:
// cloudLayerURN), are left to the engine; any other object the spec no
// longer declares refuses, as everywhere.
func (e *Engine) stackClusterPlan(ctx context.Context, p *model.Platform, name string) (*objectPlan, string) {
	return e.planObjects(ctx, p, name, true)
}

// planObjects checks everything that can be checked without the cluster
// and pairs each declared object with its state; reason is "" when the
// comparison may go on. stackCluster: see stackClusterPlan.
func (e *Engine) planObjects(ctx context.Context, p *model.Platform, name string, stackCluster bool) (*objectPlan, string) {
	fail := func(reason string) (*objectPlan, string) { return nil, reason }
	data, _, err := e.readStackState(name)
	var noReader *state.NoReaderError
	var corrupt *CorruptStateError
	switch {
	case errors.As(err, &noReader):
		return fail(noReader.Reason)
	case errors.As(err, &corrupt):
		return fail("the state does not parse")
	case err != nil:
		return fail("the state: " + oneLine(err))
	case data == nil:
		return fail("the stack does not exist yet")
	}
	if locks, err := e.Locks(name); err != nil || len(locks) > 0 {
		return fail("the stack is locked by another run")
	}
	dead, err := e.deadRuns(name)
	if err != nil {
		return fail("the run journal: " + oneLine(err))
	}
	if len(dead) > 0 {
		return fail(fmt.Sprintf("a %s of this stack (pid %d) died before it finished", dead[0].Op, dead[0].PID))
	}
	cp, err := parseFullCheckpoint(data)
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
	newCrypter := stateCrypter(ctx, latest.SecretsProviders)

	built, err := manifests.Build(p)
	if err != nil {
		return fail("the spec's objects do not build: " + oneLine(err))
	}
	sensitive := p.SensitiveValues()
	declared := map[string]*fastObject{}
	var order []*fastObject
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			key := typeToken(u.GetAPIVersion(), u.GetKind()) + "::" + objectKey(u)
			if _, dup := declared[key]; dup {
				return fail("the spec declares " + key + " twice")
			}
			o := &fastObject{desired: u, gvr: gvrOf(u)}
			declared[key] = o
			order = append(order, o)
		}
	}

	var provider *stateResource
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
				if isSecret(v) {
					v = secretValue
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
		if o == nil && stackCluster && cloudLayerURN(r.URN) {
			continue // registered by the cloud layer, not the spec's: the engine compares it
		}
		if o == nil {
			return fail("the spec no longer declares " + describeKey(key))
		}
		if seen[key] {
			return fail("the state holds " + describeKey(key) + " twice")
		}
		seen[key] = true
		o.state = r
	}
	if provider == nil {
		return fail("the stack holds no kubernetes provider")
	}
	var kubeconfig string
	if stackCluster {
		if !cloudLayerURN(provider.URN) {
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
		key := typeToken(o.desired.GetAPIVersion(), o.desired.GetKind()) + "::" + objectKey(o.desired)
		if o.state == nil {
			return fail("the spec adds " + describeKey(key))
		}
		if o.state.Provider != providerRef {
			return fail(describeKey(key) + " belongs to another provider")
		}
		inputs, err := decryptSecrets(ctx, o.state.Inputs, newCrypter)
		if err != nil {
			return fail("a secret of the state does not decrypt: " + oneLine(err))
		}
		want := markSecrets(comparableInputs(o.desired.Object), sensitive)
		if !inputsEqual(want, comparableInputs(inputs.(map[string]any))) {
			return fail("the spec changed " + describeKey(key) + " since the last up")
		}
	}
	sum := sha256.Sum256(data)
	return &objectPlan{objs: order, outputs: outputs, kubeconfig: kubeconfig, digest: hex.EncodeToString(sum[:])}, ""
}

// stateCrypter decrypts the secrets of a checkpoint with the stack's
// passphrase, made only when a secret is met.
func stateCrypter(ctx context.Context, sp *stateSecretsProvider) func() (config.Crypter, error) {
	return func() (config.Crypter, error) {
		if sp == nil {
			return nil, errors.New("the state names no secrets provider")
		}
		phrase, err := readPassphrase()
		if err != nil {
			return nil, err
		}
		return passphraseCrypter(ctx, sp.Type, sp.State, phrase)
	}
}

// cloudLayerURN reports whether a resource was registered inside the GCP
// layer (components/gcp: its URN's type runs through a paddock:gcp:
// component), as its kubernetes provider, Kata's installer and GKE's network
// logging are; the spec's objects are registered under paddock:index:Platform.
func cloudLayerURN(urn string) bool {
	parts := strings.SplitN(urn, "::", 4)
	return len(parts) == 4 && strings.Contains(parts[2], "paddock:gcp:")
}

// recordedKubeconfig is the kubeconfig the stack's kubernetes provider was
// given, decrypted when the state holds it as a secret.
func recordedKubeconfig(ctx context.Context, r *stateResource, newCrypter func() (config.Crypter, error)) (string, error) {
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
func providerChanged(ctx context.Context, r *stateResource, p *model.Platform, outputs map[string]any, newCrypter func() (config.Crypter, error)) string {
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

func resourceFor(dyn dynamic.Interface, o *fastObject) dynamic.ResourceInterface {
	if ns := o.desired.GetNamespace(); ns != "" {
		return dyn.Resource(o.gvr).Namespace(ns)
	}
	return dyn.Resource(o.gvr)
}

// gvrOf is the resource an object is served as. Every kind Paddock creates
// has the regular plural; a wrong guess fails the LIST, and the engine runs.
func gvrOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	gvr, _ := meta.UnsafeGuessKindToResource(u.GroupVersionKind())
	return gvr
}

// typeToken is the kubernetes provider's type token of an object
// (kubernetes:core/v1:Namespace), as the components register it.
func typeToken(apiVersion, kind string) string {
	gv := apiVersion
	if !strings.Contains(gv, "/") {
		gv = "core/" + gv
	}
	return "kubernetes:" + gv + ":" + kind
}

// objectKey is "namespace/name", or "name" for a cluster-scoped object: the
// resource name the components give it, and the report's Name.
func objectKey(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// urnName is the resource name at the end of a URN.
func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// describeKey turns "kubernetes:core/v1:Namespace::agents-a" into
// "Namespace agents-a".
func describeKey(key string) string {
	t, n, _ := strings.Cut(key, "::")
	if i := strings.LastIndex(t, ":"); i >= 0 {
		t = t[i+1:]
	}
	return t + " " + n
}

func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
