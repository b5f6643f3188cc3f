package converge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/drift"
)

// The whole-object comparison (drift.Compare) needs each desired object as
// the API server stores it: with its defaults and whatever admission adds.
// That is a server-side dry-run update of the desired object over the live
// one (nothing is persisted). The answer depends only on the desired object
// and the server, so it is kept per stack, keyed by a hash of the desired
// object, and a no-op `up` or `drift` asks the server nothing more than its
// lists. A full `up` recomputes every entry (a release upgrade may change a
// CRD's defaults); a server of another version, or whose mutating admission
// changed (drift.AdmissionFingerprint), discards them all.
//
// The dry-run passes through the cluster's mutating admission like any
// write, so what a webhook adds is in its answer as in the live object, and
// the two would agree. Each answer is split (drift.Admission.Reference):
// what the API server's defaulting does not explain, where a mutating
// admission object can rewrite the object, is taken out of the reference
// and noted with those objects, so Compare reports it as drift naming them.
// The cache keeps the reference so split.

// storedForms answers the stored form of desired objects, from the cache
// or a dry-run.
type storedForms struct {
	file    string
	server  string
	mu      sync.Mutex
	entries map[string]json.RawMessage
	used    map[string]bool
	fresh   bool // ignore cached entries (recompute all)
	prune   bool // keep only the entries used: the run compared every declared object
	dirty   bool
	// admission attributes what the dry-runs added, read from the cluster
	// on the first dry-run.
	admission *drift.Admission
	// created answers, in place of a dry-run, for the objects the run
	// itself created (created.go); nil asks the server for every form.
	created *Creations
}

type storedFile struct {
	Server  string                     `json:"server"`
	Entries map[string]json.RawMessage `json:"entries"`
}

// loadStoredForms reads the cache file for a server of version server
// ("" keeps no cache). A cache that does not read is started afresh: it only
// saves work.
func loadStoredForms(file, server string, fresh, prune bool) *storedForms {
	s := &storedForms{file: file, server: server, entries: map[string]json.RawMessage{}, used: map[string]bool{}, fresh: fresh, prune: prune}
	if file == "" {
		return s
	}
	b, err := os.ReadFile(s.file)
	if err != nil {
		return s
	}
	var f storedFile
	if json.Unmarshal(b, &f) == nil && f.Server == server && f.Entries != nil {
		s.entries = f.Entries
	}
	return s
}

// storedKey identifies a desired object: its kind and a hash of its JSON
// (json.Marshal sorts map keys, so equal objects hash equally).
func storedKey(desired *unstructured.Unstructured) (string, error) {
	b, err := json.Marshal(desired.Object)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return desired.GetAPIVersion() + "/" + desired.GetKind() + "/" + hex.EncodeToString(sum[:16]), nil
}

// get returns o's desired object as the server stores it, and whether the
// server was asked. An object holding a sensitive value is never cached:
// the cache is a plain file and secrets never go to one.
func (s *storedForms) get(ctx context.Context, dyn dynamic.Interface, o *Object, sensitive []string) (map[string]any, bool, error) {
	if s.fresh && s.created != nil && s.admissionFree() {
		// Like a cached form, a creation is believed only where it agrees
		// with the live object: compareLive asks the server about any
		// object that differs from it (asked is false).
		if obj, ok := s.created.answer(ctx, o, sensitive); ok && !drift.HoldsSensitive(obj, sensitive) {
			s.keep(o, obj)
			return obj, false, nil
		}
	}
	return s.getFresh(ctx, dyn, o, sensitive, s.fresh)
}

// keep caches obj as o's stored form, as a dry-run's answer is.
func (s *storedForms) keep(o *Object, obj map[string]any) {
	key, err := storedKey(o.Desired)
	if err != nil {
		return
	}
	b, err := json.Marshal(drift.Comparable(obj))
	if err != nil {
		return
	}
	s.mu.Lock()
	s.used[key] = true
	s.entries[key] = b
	s.dirty = true
	s.mu.Unlock()
}

// refresh is get asking the server whatever the cache holds: a cached form
// that differs from the live object is confirmed before it is believed (what
// the server allocates, such as a Service's cluster IP, can change with the
// live object).
func (s *storedForms) refresh(ctx context.Context, dyn dynamic.Interface, o *Object, sensitive []string) (map[string]any, error) {
	obj, _, err := s.getFresh(ctx, dyn, o, sensitive, true)
	return obj, err
}

func (s *storedForms) getFresh(ctx context.Context, dyn dynamic.Interface, o *Object, sensitive []string, fresh bool) (map[string]any, bool, error) {
	key, err := storedKey(o.Desired)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	raw, ok := s.entries[key]
	s.used[key] = true
	s.mu.Unlock()
	if ok && !fresh {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err == nil {
			return obj, false, nil
		}
	}
	obj, err := drift.StoredForm(ctx, resourceFor(dyn, o), o.Desired, o.Live)
	if err != nil {
		return nil, true, err
	}
	if !s.noAdmission() {
		s.mu.Lock()
		if s.admission == nil {
			s.admission = drift.NewAdmission(dyn)
		}
		admission := s.admission
		s.mu.Unlock()
		if obj, err = admission.Reference(ctx, o.GVR, o.Desired, obj); err != nil {
			return nil, true, fmt.Errorf("what mutating admission added to it: %w", err)
		}
	}
	if drift.HoldsSensitive(o.Desired.Object, sensitive) || drift.HoldsSensitive(obj, sensitive) {
		return obj, true, nil
	}
	if b, err := json.Marshal(drift.Comparable(obj)); err == nil {
		s.mu.Lock()
		s.entries[key] = b
		s.dirty = true
		s.mu.Unlock()
	}
	return obj, true, nil
}

// noAdmission reports whether the server's key says the cluster has no
// mutating admission object at all (CompareWhole keys the cache by
// "<version> mutating admission <drift.AdmissionFingerprint>"): then no
// dry-run answer holds anything of admission's, and nothing more is read.
// A key without a fingerprint (a caller that did not read the cluster's
// admission) splits nothing either; TestCompareWholeSplitsAdmission holds
// CompareWhole to the form.
func (s *storedForms) noAdmission() bool {
	_, fp, ok := strings.Cut(s.server, " mutating admission ")
	return !ok || fp == drift.NoAdmission
}

// admissionFree reports whether the server's key says the cluster has no
// mutating admission object (CompareWhole read its fingerprint): only then
// is a creation the reference a dry-run would be (created.go).
func (s *storedForms) admissionFree() bool {
	_, fp, ok := strings.Cut(s.server, " mutating admission ")
	return ok && fp == drift.NoAdmission
}

// save writes the cache when it changed, owner-only. After a comparison of
// every declared object it keeps only their entries (the platform's current
// objects).
func (s *storedForms) save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == "" || (!s.dirty && (!s.prune || len(s.used) == len(s.entries))) {
		return nil
	}
	kept := s.entries
	if s.prune {
		kept = map[string]json.RawMessage{}
		for k := range s.used {
			if v, ok := s.entries[k]; ok {
				kept[k] = v
			}
		}
	}
	b, err := json.Marshal(storedFile{Server: s.server, Entries: kept})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.file), 0o700); err != nil {
		return err
	}
	tmp := s.file + fmt.Sprintf(".tmp-%d", os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.file)
}
