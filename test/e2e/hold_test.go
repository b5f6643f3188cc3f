//go:build e2e

package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A fault test must make its interruption happen at a known point, not race
// the run it interrupts: on an idle machine an up can finish before a poll of
// its event log notices it started. createHold holds the API server's create
// of one namespace in an admission webhook served on loopback until the test
// has done its damage, so the run is certainly mid-create when it lands.

// createHold is a validating webhook that holds one namespace's create.
type createHold struct {
	namespace string
	config    string // the ValidatingWebhookConfiguration's name
	srv       *httptest.Server
	held      chan struct{} // closed when the create arrived and is being held
	release   chan struct{} // closed to let held requests answer
	once      sync.Once
	probed    chan struct{} // closed when a dry-run probe reached the webhook
	probeOnce sync.Once
}

// holdNamespaceCreate registers the webhook and waits until the API server
// calls it (a dry-run create is the probe). Release lets it answer; the
// test's cleanup releases it, deletes the configuration and closes the
// server, so a failed test leaves no webhook behind.
func holdNamespaceCreate(t *testing.T, e *env, namespace string) *createHold {
	t.Helper()
	h := &createHold{
		namespace: namespace,
		config:    "paddock-e2e-hold-" + namespace,
		held:      make(chan struct{}),
		release:   make(chan struct{}),
		probed:    make(chan struct{}),
	}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	url := h.srv.URL + "/hold"
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore // a webhook left behind can never block the cluster
	timeout := int32(30)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: h.config},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "hold.e2e.paddock.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}}}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "the-held-namespace", Expression: fmt.Sprintf("object.metadata.name == %q", namespace)}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctxTimeout(10*time.Second), cfg, metav1.CreateOptions{}); err != nil {
		h.srv.Close()
		t.Fatalf("registering the hold webhook: %v", err)
	}
	t.Cleanup(func() { h.close(t, e) })
	// The API server picks the configuration up asynchronously: probe with
	// dry-run creates until one reaches the webhook.
	probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	eventually(t, "the hold webhook is called by the API server", 30*time.Second, func() error {
		_, err := e.kube.CoreV1().Namespaces().Create(ctxTimeout(10*time.Second), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		select {
		case <-h.probed:
			return nil
		default:
			return fmt.Errorf("not called yet")
		}
	})
	return h
}

func (h *createHold) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an admission review", http.StatusBadRequest)
		return
	}
	req := review.Request
	if req.Name == h.namespace && req.DryRun != nil && *req.DryRun {
		h.probeOnce.Do(func() { close(h.probed) })
	} else if req.Name == h.namespace {
		h.once.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-r.Context().Done(): // the API server went away
			return
		}
	}
	review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// Release lets every held request answer (allowed).
func (h *createHold) Release() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// close releases, deletes the configuration (the API server must be up:
// tests that stop it restore it first) and stops the server.
func (h *createHold) close(t *testing.T, e *env) {
	h.Release()
	err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctxTimeout(10*time.Second), h.config, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the hold webhook %s: %v (failurePolicy Ignore: it cannot block the cluster)", h.config, err)
	}
	h.srv.Close()
}

// restoreLocal brings every component of the local cluster back (paddock
// local up repairs what died and leaves the rest): deferred by every test
// that kills one, so a test that fails half-way still hands the next test
// the cluster it found.
func (e *env) restoreLocal(t *testing.T) {
	t.Helper()
	if out, err := e.paddockRaw("local", "up"); err != nil {
		t.Errorf("local up did not restore the local cluster: %v\n%s", err, tail(out, 20))
		return
	}
	eventually(t, "the API server answers again", time.Minute, func() error {
		body, err := e.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctxTimeout(5 * time.Second))
		if err == nil && !strings.Contains(string(body), "ok") {
			err = fmt.Errorf("readyz: %s", body)
		}
		return err
	})
}
