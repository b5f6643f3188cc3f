package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// auditEventLine is one line of the API server's JSON audit log: the event it
// writes for a create of a claim, made by verify's admin identity acting as
// actor, at level.
func auditEventLine(t *testing.T, namespace, name, actor, level string) []byte {
	t.Helper()
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
		"auditID": "8e1f3b52-0c7a-4b1e-9d61-2f4c5a7b9e10", "stage": "ResponseComplete",
		"requestURI": "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + namespace + "/sandboxclaims?dryRun=All",
		"verb":       "create",
		"user":       map[string]any{"username": "paddock-admin", "groups": []string{"system:masters", "system:authenticated"}},
		"impersonatedUser": map[string]any{"username": actor, "groups": []string{
			"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}},
		"sourceIPs": []string{"127.0.0.1"},
		"userAgent": "paddock/v0.0.0 (linux/amd64) kubernetes/$Format",
		"objectRef": map[string]any{"resource": "sandboxclaims", "namespace": namespace, "name": name,
			"apiGroup": "extensions.agents.x-k8s.io", "apiVersion": "v1beta1"},
		"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": 201},
		"requestReceivedTimestamp": "2026-05-04T09:12:33.418203Z",
		"stageTimestamp":           "2026-05-04T09:12:33.425911Z",
		"annotations": map[string]any{
			"authorization.k8s.io/decision": "allow",
			"authorization.k8s.io/reason":   `RBAC: allowed by RoleBinding "agent-orchestrator/` + namespace + `"`,
		},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// auditVerifier is a verifier of examples/local whose API server, asked to
// create a claim, appends to a temp audit log what record(claim, actor)
// returns, as the local API server does. The log already holds other
// events, a line too long to read and one that is no event.
func auditVerifier(t *testing.T, record func(claim *unstructured.Unstructured, actor string) []byte) (*Verifier, string, *[]string) {
	t.Helper()
	p := localPlatform(t)
	v, _, dyn := fakeVerifier(t, p, nil)
	path := filepath.Join(t.TempDir(), "audit.log")
	before := auditEventLine(t, p.Tenants[0].Namespace, "an-earlier-claim", "system:serviceaccount:x:y", "Metadata")
	before = append(before, []byte(strings.Repeat("x", auditLineCap+10)+"\nnot json\n")...)
	if err := os.WriteFile(path, before, 0o600); err != nil {
		t.Fatal(err)
	}
	v.opts.AuditLogPath = path
	v.auditWait = 500 * time.Millisecond
	var actors []string
	actor := ""
	v.impersonate = func(user string) (dynamic.Interface, error) {
		actors = append(actors, user)
		actor = user
		return dyn, nil
	}
	dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if !slices.Equal(create.GetCreateOptions().DryRun, []string{metav1.DryRunAll}) {
			t.Errorf("claim created with dry run %v: verify must never persist one", create.GetCreateOptions().DryRun)
		}
		u := create.GetObject().(*unstructured.Unstructured)
		if line := record(u, actor); len(line) > 0 {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(line); err != nil {
				t.Fatal(err)
			}
		}
		return true, u, nil
	})
	return v, path, &actors
}

func TestV13FindsTheClaimAsTheOrchestrator(t *testing.T) {
	v, _, actors := auditVerifier(t, func(c *unstructured.Unstructured, actor string) []byte {
		return auditEventLine(t, c.GetNamespace(), c.GetName(), actor, "Metadata")
	})
	got := only(t, v, "V13")
	wantStatus(t, got, Pass, "system:serviceaccount:agents-team-a:agent-orchestrator",
		"impersonated by verify's paddock-admin", "8e1f3b52-0c7a-4b1e-9d61-2f4c5a7b9e10", "2026-05-04T09:12:33.418Z", "127.0.0.1", "answered 201", auditProbePrefix)
	if got[0].Subject != "agents-team-a/agent-orchestrator" {
		t.Errorf("subject %q", got[0].Subject)
	}
	if want := []string{"system:serviceaccount:agents-team-a:agent-orchestrator"}; !slices.Equal(*actors, want) {
		t.Errorf("acted as %v, want %v", *actors, want)
	}
}

func TestV13FailsWithoutTheEvent(t *testing.T) {
	for what, record := range map[string]func(*unstructured.Unstructured, string) []byte{
		"nothing written": func(*unstructured.Unstructured, string) []byte { return nil },
		"another claim": func(c *unstructured.Unstructured, actor string) []byte {
			return auditEventLine(t, c.GetNamespace(), c.GetName()+"x", actor, "Metadata")
		},
		"another namespace": func(c *unstructured.Unstructured, actor string) []byte {
			return auditEventLine(t, "elsewhere", c.GetName(), actor, "Metadata")
		},
		"half a line": func(c *unstructured.Unstructured, actor string) []byte {
			line := auditEventLine(t, c.GetNamespace(), c.GetName(), actor, "Metadata")
			return line[:len(line)/2]
		},
	} {
		t.Run(what, func(t *testing.T) {
			v, path, _ := auditVerifier(t, record)
			wantStatus(t, only(t, v, "V13"), Fail, "no audit event", auditProbePrefix, path, "paddock local up")
		})
	}
}

func TestV13FailsWhenTheEventNamesAnotherUser(t *testing.T) {
	v, _, _ := auditVerifier(t, func(c *unstructured.Unstructured, _ string) []byte {
		return auditEventLine(t, c.GetNamespace(), c.GetName(), "system:serviceaccount:agents-team-a:agent-runtime", "Metadata")
	})
	wantStatus(t, only(t, v, "V13"), Fail, `names "system:serviceaccount:agents-team-a:agent-runtime" as the user, not system:serviceaccount:agents-team-a:agent-orchestrator`)
}

func TestV13FailsAboveMetadata(t *testing.T) {
	v, _, _ := auditVerifier(t, func(c *unstructured.Unstructured, actor string) []byte {
		return auditEventLine(t, c.GetNamespace(), c.GetName(), actor, "RequestResponse")
	})
	wantStatus(t, only(t, v, "V13"), Fail, `level "RequestResponse", not Metadata`)
}

func TestV13FailsWithoutALog(t *testing.T) {
	v, path, _ := auditVerifier(t, func(*unstructured.Unstructured, string) []byte { return nil })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, only(t, v, "V13"), Fail, "writes no audit log at "+path, "paddock local down")
}

// The log rotated between the look at its size and the request: the new,
// shorter file is read from its start.
func TestV13ReadsARotatedLogFromItsStart(t *testing.T) {
	v, path, _ := auditVerifier(t, func(*unstructured.Unstructured, string) []byte { return nil })
	// Ahead of auditVerifier's reactor: the API server rotated the log.
	v.dyn.(interface {
		PrependReactor(string, string, k8stesting.ReactionFunc)
	}).PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateActionImpl).GetObject().(*unstructured.Unstructured)
		line := auditEventLine(t, u.GetNamespace(), u.GetName(), "system:serviceaccount:agents-team-a:agent-orchestrator", "Metadata")
		if err := os.WriteFile(path, line, 0o600); err != nil {
			t.Fatal(err)
		}
		return true, u, nil
	})
	wantStatus(t, only(t, v, "V13"), Pass, "audit ID")
}

func TestV13NotVerifiableWithoutTheLog(t *testing.T) {
	p := localPlatform(t)
	for kind, words := range map[model.TargetKind][]string{
		model.TargetGKE:        {"GKE keeps its Cloud Audit Logs sinks"},
		model.TargetKubeconfig: {"audit-policy.yaml", "--audit-policy-file"},
		model.TargetLocal:      {"no audit log is known"},
	} {
		q := *p
		q.Target.Kind = kind
		v, _, _ := fakeVerifier(t, &q, nil)
		v.impersonate = func(string) (dynamic.Interface, error) {
			t.Error("a claim was made though no audit log can be read")
			return v.dyn, nil
		}
		wantStatus(t, only(t, v, "V13"), NotVerifiable, words...)
	}
}

func TestV13NotVerifiableWithoutAnOrchestrator(t *testing.T) {
	p := localPlatform(t)
	p.Tenants[0].Identity.Orchestrator = false
	v, _, _ := fakeVerifier(t, p, nil)
	v.opts.AuditLogPath = filepath.Join(t.TempDir(), "audit.log")
	wantStatus(t, only(t, v, "V13"), NotVerifiable, "no tenant has the orchestrator identity")
}

// Whatever the log holds, a look reads a bounded part of it and never
// fails on its contents.
func TestFindAuditEventBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	big := strings.Repeat(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"create","objectRef":{"name":"needle"}}`+"\n", (auditReadCap/90)+10)
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := 0
	ev, err := findAuditEvent(path, 0, []byte("needle"), func(*auditEvent) bool { seen++; return false })
	if err != nil || ev != nil {
		t.Fatalf("event %v, error %v", ev, err)
	}
	if lines := strings.Count(big, "\n"); seen >= lines || seen == 0 {
		t.Errorf("decoded %d of %d lines: the read is not bounded to %d bytes", seen, lines, auditReadCap)
	}
	for _, junk := range []string{"", "\n\n", "{", strings.Repeat("{", auditLineCap*2), "\x00\xff needle \n"} {
		if err := os.WriteFile(path, []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		if ev, err := findAuditEvent(path, 0, []byte("needle"), func(*auditEvent) bool { return true }); err != nil || ev != nil {
			t.Errorf("%.20q: event %v, error %v", junk, ev, err)
		}
	}
}
