package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/gateway"
)

// The user extras the API server sets on a pod-bound projected token: they
// name the pod that holds it.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// TokenReviewer reviews a sandbox's projected service-account token with
// the TokenReview API, for the configured audience only, and names the
// sandbox of the pod the token is bound to through the Identifier's pods.
// It implements gateway.TokenReviewer; its service account needs create on
// tokenreviews (authentication.k8s.io).
type TokenReviewer struct {
	kube kubernetes.Interface
	id   *Identifier
	now  func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]review
}

// review is one answer, kept briefly so a busy sandbox does not cost an
// API call per request.
type review struct {
	pod, uid string // "" when refused
	until    time.Time
}

const (
	reviewTTL     = 30 * time.Second
	maxReviews    = 4096
	reviewTimeout = 5 * time.Second
)

// NewTokenReviewer reviews with kube and names callers through id.
func NewTokenReviewer(kube kubernetes.Interface, id *Identifier) *TokenReviewer {
	return &TokenReviewer{kube: kube, id: id, now: time.Now, cache: map[[32]byte]review{}}
}

// Review says which sandbox holds token, or refuses it
// (gateway.ErrUnknownCaller): not authenticated, not for audience, not a
// pod-bound token of a sandbox pod of the namespace.
func (r *TokenReviewer) Review(ctx context.Context, token, audience string) (gateway.Caller, error) {
	// The cache is keyed by the token's hash, never the token itself.
	k := sha256.Sum256([]byte(audience + "\x00" + token))
	now := r.now()
	r.mu.Lock()
	rv, ok := r.cache[k]
	r.mu.Unlock()
	if !ok || now.After(rv.until) {
		var err error
		if rv, err = r.ask(ctx, token, audience); err != nil {
			return gateway.Caller{}, err
		}
		rv.until = now.Add(reviewTTL)
		r.mu.Lock()
		if len(r.cache) >= maxReviews {
			for key, old := range r.cache {
				if now.After(old.until) || len(r.cache) >= maxReviews {
					delete(r.cache, key)
				}
			}
		}
		r.cache[k] = rv
		r.mu.Unlock()
	}
	if rv.pod == "" {
		return gateway.Caller{}, gateway.ErrUnknownCaller
	}
	// The pod is looked up on every request: a token outliving its pod
	// (deleted, or its sandbox gone) names no one.
	return r.id.Pod(rv.pod, rv.uid)
}

// ask sends one TokenReview. A refused token is an answer (pod ""); an
// error is the API's failure, which the gateway answers with 503.
func (r *TokenReviewer) ask(ctx context.Context, token, audience string) (review, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := r.kube.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return review{}, fmt.Errorf("TokenReview: %w", err)
	}
	st := tr.Status
	if !st.Authenticated || !slices.Contains(st.Audiences, audience) {
		return review{}, nil
	}
	// Only a service account of the gateway's own namespace.
	if ns, _, ok := serviceAccount(st.User.Username); !ok || ns != r.id.namespace {
		return review{}, nil
	}
	pod, uid := first(st.User.Extra[extraPodName]), first(st.User.Extra[extraPodUID])
	if pod == "" || uid == "" {
		return review{}, nil // not bound to a pod
	}
	return review{pod: pod, uid: uid}, nil
}

// serviceAccount splits "system:serviceaccount:NS:NAME".
func serviceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}

func first(v authnv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
