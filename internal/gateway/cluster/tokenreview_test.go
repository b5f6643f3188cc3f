package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/gateway"
)

// reviews answers TokenReviews as the API server would for a few tokens.
func reviews(f *fixture, calls *atomic.Int32) {
	answers := map[string]authnv1.TokenReviewStatus{
		"tok-sb-1": {Authenticated: true, Audiences: []string{"paddock-gateway"}, User: authnv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":agent-runtime",
			Extra:    map[string]authnv1.ExtraValue{extraPodName: {"sb-1"}, extraPodUID: {"pod-sb-1"}},
		}},
		"tok-other-ns": {Authenticated: true, Audiences: []string{"paddock-gateway"}, User: authnv1.UserInfo{
			Username: "system:serviceaccount:agents-team-b:agent-runtime",
			Extra:    map[string]authnv1.ExtraValue{extraPodName: {"sb-1"}, extraPodUID: {"pod-sb-1"}},
		}},
		"tok-unbound": {Authenticated: true, Audiences: []string{"paddock-gateway"}, User: authnv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":agent-runtime",
		}},
		"tok-old-pod": {Authenticated: true, Audiences: []string{"paddock-gateway"}, User: authnv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":agent-runtime",
			Extra:    map[string]authnv1.ExtraValue{extraPodName: {"sb-1"}, extraPodUID: {"pod-of-an-earlier-sb-1"}},
		}},
	}
	f.kube.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "tok-api-down" {
			return true, nil, errors.New("connection refused")
		}
		st, ok := answers[tr.Spec.Token]
		// The API server authenticates for the audiences asked only.
		if ok && len(tr.Spec.Audiences) == 1 && tr.Spec.Audiences[0] == "paddock-gateway" {
			tr.Status = st
		}
		return true, tr, nil
	})
}

func TestTokenReviewer(t *testing.T) {
	f := newFixture(t, []*corev1.Pod{sandboxPod("sb-1", "sb-1", "10.214.0.5")}, sandbox("sb-1", "session-1"))
	var calls atomic.Int32
	reviews(f, &calls)
	r := NewTokenReviewer(f.kube, f.id)
	ctx := context.Background()
	c, err := r.Review(ctx, "tok-sb-1", "paddock-gateway")
	if want := (gateway.Caller{Namespace: ns, Pod: "sb-1", Sandbox: "sb-1", Claim: "session-1"}); err != nil || c != want {
		t.Errorf("a pod-bound token: %+v, %v; want %+v", c, err, want)
	}
	for tok, what := range map[string]string{
		"forged":       "a token the API server does not authenticate",
		"tok-other-ns": "a token of another namespace",
		"tok-unbound":  "a token bound to no pod",
		"tok-old-pod":  "a token of an earlier pod of the same name",
	} {
		if c, err := r.Review(ctx, tok, "paddock-gateway"); !errors.Is(err, gateway.ErrUnknownCaller) {
			t.Errorf("%s: %+v, %v; want ErrUnknownCaller", what, c, err)
		}
	}
	if _, err := r.Review(ctx, "tok-sb-1", "another-audience"); !errors.Is(err, gateway.ErrUnknownCaller) {
		t.Errorf("a token for another audience: %v", err)
	}
	if _, err := r.Review(ctx, "tok-api-down", "paddock-gateway"); err == nil || errors.Is(err, gateway.ErrUnknownCaller) {
		t.Errorf("the API unreachable: %v; want an error that is not ErrUnknownCaller (503, not 403)", err)
	}

	// Answers are kept for a while; the pod is looked up every time.
	before := calls.Load()
	for range 5 {
		r.Review(ctx, "tok-sb-1", "paddock-gateway")
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("%d TokenReviews for a token reviewed moments ago, want 0", n)
	}
	if err := f.kube.CoreV1().Pods(ns).Delete(ctx, "sb-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := r.Review(ctx, "tok-sb-1", "paddock-gateway"); errors.Is(err, gateway.ErrUnknownCaller) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the token of a deleted pod: %v", err)
		}
	}
	r.now = func() time.Time { return time.Now().Add(reviewTTL + time.Second) }
	r.Review(ctx, "tok-sb-1", "paddock-gateway")
	if n := calls.Load() - before; n != 1 {
		t.Errorf("%d TokenReviews after the answer expired, want 1", n)
	}
}
