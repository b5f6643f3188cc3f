// The audit check (V13): the API server records who changes the sandbox
// resources and the tenants' fence. Where verify can read the audit log (the
// local stack's, Options.AuditLogPath), it makes a server-side dry-run claim
// as each tenant's orchestrator and finds the API server's record of it.

package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const (
	// auditProbePrefix starts the name of each dry-run claim V13 makes.
	auditProbePrefix = "paddock-verify-audit-"
	// defaultAuditWait bounds how long V13 looks for its event. The local
	// API server's blocking log backend writes it as the request completes;
	// the wait covers a slow disk or a busy API server.
	defaultAuditWait = 10 * time.Second
	auditPoll        = 200 * time.Millisecond
	// auditReadCap bounds what one look reads: only what the API server
	// wrote after the look began, and at most this much of it.
	auditReadCap = 8 << 20
	// auditLineCap bounds one event: a Metadata event is a few KiB, and a
	// longer line is skipped unread.
	auditLineCap = 256 << 10
)

// auditEvent is the part of an audit.k8s.io/v1 Event that V13 reads.
type auditEvent struct {
	APIVersion               string           `json:"apiVersion"`
	Kind                     string           `json:"kind"`
	Level                    string           `json:"level"`
	AuditID                  string           `json:"auditID"`
	Stage                    string           `json:"stage"`
	RequestURI               string           `json:"requestURI"`
	Verb                     string           `json:"verb"`
	User                     auditUser        `json:"user"`
	ImpersonatedUser         *auditUser       `json:"impersonatedUser,omitempty"`
	SourceIPs                []string         `json:"sourceIPs,omitempty"`
	ObjectRef                *auditObjectRef  `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status   `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime `json:"stageTimestamp"`
}

type auditUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

type auditObjectRef struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	APIGroup  string `json:"apiGroup"`
}

// actor is the identity the request acted as: the impersonated user when
// there was one, else the one that authenticated.
func (e *auditEvent) actor() auditUser {
	if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
		return *e.ImpersonatedUser
	}
	return e.User
}

// auditElsewhere says why a target's audit log cannot be read from here.
func auditElsewhere(kind model.TargetKind) string {
	switch kind {
	case model.TargetGKE:
		return "GKE keeps its Cloud Audit Logs sinks; verify cannot read them"
	case model.TargetKubeconfig:
		return "the API server's audit log lies on its control plane, where verify cannot read it; run the API server with the policy `paddock render --out DIR` writes (" +
			manifests.AuditPolicyFile + ", for --audit-policy-file)"
	}
	return "no audit log is known for this cluster"
}

// checkAuditTrail proves, where verify can read the API server's audit log,
// that a change of a sandbox resource is recorded with who made it: a
// dry-run claim made as each tenant's orchestrator must appear in the log
// with that identity.
func checkAuditTrail(ctx context.Context, v *Verifier) []Result {
	if v.opts.AuditLogPath == "" {
		return []Result{notVerifiable("api-server", "%s", auditElsewhere(v.p.Target.Kind))}
	}
	var out []Result
	for _, t := range v.p.Tenants {
		if t.Identity.Orchestrator {
			out = append(out, auditTenant(ctx, v, t))
		}
	}
	if len(out) == 0 {
		return []Result{notVerifiable("api-server", "no tenant has the orchestrator identity to make a claim as")}
	}
	return out
}

// auditTenant makes one dry-run claim as t's orchestrator and looks for it in
// the audit log.
func auditTenant(ctx context.Context, v *Verifier, t model.Tenant) Result {
	path := v.opts.AuditLogPath
	subject := t.Namespace + "/" + model.AgentOrchestratorServiceAccount
	orchestrator := serviceAccountUser(t.Namespace, model.AgentOrchestratorServiceAccount)
	if v.impersonate == nil {
		return fail(subject, "verify has no client to act as %s", orchestrator)
	}
	dyn, err := v.impersonate(orchestrator)
	if err != nil {
		return fail(subject, "a client acting as %s: %v", orchestrator, err)
	}
	// What the log holds before the request; only what follows is read.
	offset, err := auditLogSize(path)
	if err != nil {
		return fail(subject, "%s", auditReadError(path, err))
	}
	name := auditProbePrefix + utilrand.String(5)
	// A dry run goes through authentication, authorization and admission
	// and is audited like any request; the API server stores nothing.
	_, createErr := dyn.Resource(claimsGVR).Namespace(t.Namespace).Create(ctx, probeClaim(t, name, time.Now()),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})

	wait := v.auditWait
	if wait <= 0 {
		wait = defaultAuditWait
	}
	ev, err := waitAuditEvent(ctx, path, offset, wait, []byte(name), func(e *auditEvent) bool {
		r := e.ObjectRef
		return e.Verb == "create" && r != nil && r.Resource == claimsGVR.Resource && r.APIGroup == claimsGVR.Group &&
			r.Namespace == t.Namespace && r.Name == name
	})
	refused := ""
	if createErr != nil {
		refused = "; the dry run itself was answered: " + shortErr(createErr)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(subject, "the API server writes no audit log at %s: restart the local cluster with this paddock (paddock local down; paddock local up) so it runs with the audit policy%s", path, refused)
	case err != nil:
		return fail(subject, "%s", auditReadError(path, err))
	case ev == nil:
		return fail(subject, "no audit event of the dry-run create of claim %s in %s within %s in %s: the API server's audit policy does not record claims; restart the local cluster with this paddock (paddock local down; paddock local up)%s",
			name, t.Namespace, wait, path, refused)
	}
	var problems []string
	if got := ev.actor().Username; got != orchestrator {
		problems = append(problems, fmt.Sprintf("names %q as the user, not %s", got, orchestrator))
	}
	if ev.Level != manifests.AuditLevelMetadata {
		problems = append(problems, fmt.Sprintf("is recorded at level %q, not Metadata (Paddock's policy records no request bodies)", ev.Level))
	}
	if ev.RequestReceivedTimestamp.IsZero() {
		problems = append(problems, "has no time")
	}
	if len(ev.SourceIPs) == 0 {
		problems = append(problems, "has no source address")
	}
	if len(problems) > 0 {
		return fail(subject, "the audit event %s of the dry-run create of claim %s %s", ev.AuditID, name, strings.Join(problems, ", "))
	}
	as := orchestrator
	if ev.ImpersonatedUser != nil && ev.User.Username != "" {
		as += " (impersonated by verify's " + ev.User.Username + ")"
	}
	code := ""
	if ev.ResponseStatus != nil && ev.ResponseStatus.Code != 0 {
		code = fmt.Sprintf(", answered %d", ev.ResponseStatus.Code)
	}
	return pass(subject, "the dry-run create of claim %s as %s is recorded: audit ID %s at %s from %s, level Metadata%s%s",
		name, as, ev.AuditID, ev.RequestReceivedTimestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00"), strings.Join(ev.SourceIPs, ","), code, refused)
}

// auditReadError says why the audit log could not be read, and what to do.
func auditReadError(path string, err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Sprintf("cannot read the API server's audit log %s (%v): the API server keeps it to its owner; run verify as the user that started the local cluster", path, err)
	}
	return fmt.Sprintf("reading the API server's audit log %s: %v", path, err)
}

// auditLogSize is the size of the log now (0 when there is none yet), after
// making sure it can be read at all.
func auditLogSize(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// waitAuditEvent looks for an event match accepts among those written to the
// log at path after offset, until it finds one or wait has passed. It
// returns fs.ErrNotExist when the log never appeared.
func waitAuditEvent(ctx context.Context, path string, offset int64, wait time.Duration, needle []byte, match func(*auditEvent) bool) (*auditEvent, error) {
	deadline := time.Now().Add(wait)
	for {
		ev, err := findAuditEvent(path, offset, needle, match)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if ev != nil {
			return ev, nil
		}
		if !time.Now().Before(deadline) {
			return nil, err // fs.ErrNotExist or nothing found
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(auditPoll):
		}
	}
}

// findAuditEvent reads the log at path from offset, or from its start when it
// is now shorter (the API server rotated it meanwhile), at most auditReadCap
// bytes, and returns the first event match accepts; only lines holding
// needle are decoded. A line longer than
// auditLineCap, or not an event, is skipped: memory stays bounded whatever
// the file holds. A last line without its newline yet is read as it is.
func findAuditEvent(path string, offset int64, needle []byte, match func(*auditEvent) bool) (*auditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < offset {
		offset = 0
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(io.LimitReader(f, auditReadCap), 64<<10)
	var line []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long && len(line)+len(chunk) <= auditLineCap {
			line = append(line, chunk...)
		} else {
			long, line = true, line[:0]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of this line follows
		}
		if !long && bytes.Contains(line, needle) {
			var ev auditEvent
			if json.Unmarshal(line, &ev) == nil && ev.Kind == "Event" && ev.APIVersion == manifests.AuditAPIVersion && match(&ev) {
				return &ev, nil
			}
		}
		line, long = line[:0], false
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
