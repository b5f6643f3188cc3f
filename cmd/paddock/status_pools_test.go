package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pools"
)

var statusNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func statusPools() poolHealth {
	return poolHealth{Pools: []pools.Pool{
		{Namespace: "agents-team-a", Name: "agent", Template: "agent", UpdateStrategy: "Recreate", Desired: 2, Ready: 2, Current: 2, Claimed: 1,
			Oldest: statusNow.Add(-90 * time.Second), Sandboxes: []pools.Sandbox{
				{Name: "agent-a", State: pools.Current, Ready: true, Created: statusNow.Add(-90 * time.Second)},
				{Name: "agent-b", State: pools.Current, Ready: true, Created: statusNow.Add(-30 * time.Second)},
				{Name: "agent-c", State: pools.Claimed, Ready: true, Claim: "session-1", Created: statusNow.Add(-time.Hour)},
			}},
		{Namespace: "agents-team-b", Name: "agent", Template: "agent", UpdateStrategy: "OnReplenish", Desired: 1, Stale: 1,
			Oldest: statusNow.Add(-3 * time.Hour), Sandboxes: []pools.Sandbox{
				{Name: "agent-old", State: pools.Stale, Ready: true, Created: statusNow.Add(-3 * time.Hour), Why: "built from template revision 1, the template is now at 2 (its pod spec changed)"},
			}},
	}, Missing: []string{"agents-team-c/agent"}}
}

func TestStatusShowsEachPoolsHealth(t *testing.T) {
	var out bytes.Buffer
	printPoolHealth(&out, statusPools(), statusNow)
	got := out.String()
	lines := strings.Split(got, "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "agents-team-") && strings.Contains(l, "Re") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	want := []string{
		"agents-team-a/agent Recreate 2 2 0 1 1m30s",
		"agents-team-b/agent OnReplenish 1 0 1 0 3h0m0s",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s\nall:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), got)
	}
	for _, w := range []string{"POOL", "DESIRED", "READY", "STALE", "CLAIMED", "OLDEST",
		"agents-team-b/agent holds sandboxes of an older template: agent-old", "agents-team-c/agent: not on the cluster"} {
		if !strings.Contains(got, w) {
			t.Errorf("section lacks %q:\n%s", w, got)
		}
	}

	out.Reset()
	printPoolHealth(&out, poolHealth{Err: errors.New("connection refused")}, statusNow)
	if !strings.Contains(out.String(), "not read: connection refused") {
		t.Errorf("unreadable cluster: %q", out.String())
	}
	out.Reset()
	printPoolHealth(&out, poolHealth{}, statusNow)
	if out.Len() != 0 {
		t.Errorf("a platform without pools printed %q", out.String())
	}
}

func TestStatusJSONCarriesPoolHealth(t *testing.T) {
	p := &model.Platform{Name: "demo", Target: model.Target{Kind: model.TargetLocal}}
	var out bytes.Buffer
	if err := writeStatusJSON(&out, statusDoc(p, map[string]any{"namespaces": []any{"agents-team-a"}}, statusPools(), statusNow)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Platform  string `json:"platform"`
		WarmPools []struct {
			Namespace, Name, UpdateStrategy         string
			Desired, Ready, Stale, Claimed, Current int
			OldestAgeSeconds                        int64
			Sandboxes                               []struct{ Name, State, Claim string }
		} `json:"warmPools"`
		Missing []string `json:"missingWarmPools"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.Platform != "demo" || len(doc.WarmPools) != 2 || len(doc.Missing) != 1 {
		t.Fatalf("got %+v", doc)
	}
	a, b := doc.WarmPools[0], doc.WarmPools[1]
	if a.Desired != 2 || a.Ready != 2 || a.Stale != 0 || a.Claimed != 1 || a.OldestAgeSeconds != 90 || len(a.Sandboxes) != 3 || a.Sandboxes[2].Claim != "session-1" {
		t.Errorf("pool a: %+v", a)
	}
	if b.Stale != 1 || b.UpdateStrategy != "OnReplenish" || b.OldestAgeSeconds != 3*3600 || b.Sandboxes[0].State != "stale" {
		t.Errorf("pool b: %+v", b)
	}
	for _, key := range []string{`"desired"`, `"ready"`, `"stale"`, `"claimed"`, `"oldestAgeSeconds"`, `"oldest"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, out.String())
		}
	}
}
