package pools_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/pools"
)

// liveObjects are objects the v0.5.6 controller made on the real node
// (testdata/live-v0.5.6.json, see its _about).
type liveObjects struct {
	TemplateRev1, TemplateRev2, Pool        unstructured.Unstructured
	SandboxesRev1, SandboxesClaimed, Claims []unstructured.Unstructured
	SandboxesRev2                           []unstructured.Unstructured
	PodsRev1, PodsRev2                      []corev1.Pod
}

func loadLive(t *testing.T) liveObjects {
	t.Helper()
	b, err := os.ReadFile("testdata/live-v0.5.6.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var l liveObjects
	for key, into := range map[string]any{
		"templateRev1": &l.TemplateRev1.Object, "templateRev2": &l.TemplateRev2.Object, "pool": &l.Pool.Object,
		"sandboxesRev1": &l.SandboxesRev1, "sandboxesClaimed": &l.SandboxesClaimed, "claims": &l.Claims,
		"sandboxesRev2": &l.SandboxesRev2, "podsRev1": &l.PodsRev1, "podsRev2": &l.PodsRev2,
	} {
		if err := json.Unmarshal(raw[key], into); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	return l
}

// On the controller's own objects: the hash Paddock computes from the live
// template is the one the controller labelled its sandboxes with, at both
// revisions, so they read current; the sandboxes of revision 1 read stale
// against revision 2, and the one a claim took reads claimed.
func TestClassifyLiveObjects(t *testing.T) {
	l := loadLive(t)
	label := func(sb unstructured.Unstructured) string {
		return sb.GetLabels()[sandboxv1beta1.SandboxTemplateHashLabel]
	}

	rev1 := pools.Classify(&l.Pool, &l.TemplateRev1, l.SandboxesRev1, nil, l.PodsRev1, nil)
	if rev1.Problem != "" || rev1.Current != 2 || rev1.Ready != 2 || rev1.Stale != 0 || !rev1.Fresh() {
		t.Fatalf("revision 1: %+v", rev1)
	}
	for _, sb := range l.SandboxesRev1 {
		if label(sb) != rev1.TemplateHash {
			t.Errorf("sandbox %s: the controller's hash %q, Paddock's %q", sb.GetName(), label(sb), rev1.TemplateHash)
		}
	}

	mid := pools.Classify(&l.Pool, &l.TemplateRev2, l.SandboxesClaimed, l.Claims, nil, nil)
	if mid.Stale != 2 || mid.Claimed != 1 || mid.Current != 0 || mid.TemplateHash == rev1.TemplateHash {
		t.Fatalf("revision 2 over revision 1's sandboxes: %+v", mid)
	}
	for _, s := range mid.Sandboxes {
		if s.State == pools.Stale && !strings.Contains(s.Why, "(its pod spec changed)") {
			t.Errorf("stale %s: %q", s.Name, s.Why)
		}
		if s.State == pools.Claimed && s.Claim != "session-by-hand" {
			t.Errorf("claimed %s by %q", s.Name, s.Claim)
		}
	}

	rev2 := pools.Classify(&l.Pool, &l.TemplateRev2, l.SandboxesRev2, l.Claims, l.PodsRev2, nil)
	if rev2.Current != 2 || rev2.Ready != 2 || rev2.Stale != 0 || rev2.Claimed != 1 || !rev2.Fresh() || rev2.UpdateStrategy != "Recreate" {
		t.Fatalf("after the rollout: %+v", rev2)
	}
	for _, sb := range l.SandboxesRev2 {
		if h := label(sb); h != "" && h != rev2.TemplateHash {
			t.Errorf("sandbox %s: the controller's hash %q, Paddock's %q", sb.GetName(), h, rev2.TemplateHash)
		}
	}
	if rev2.TemplateWritten.IsZero() {
		t.Error("no write time read from the live template's managedFields")
	}
}
