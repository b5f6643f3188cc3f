package drift

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func fleetOf() *Fleet {
	clean := &Report{Stack: "a", Checked: 12}
	drifted := &Report{Stack: "b", Checked: 12, Resources: []Resource{{Name: "default-deny", Change: Modified}}}
	f := &Fleet{Parallel: 2, Stacks: []FleetStack{
		{Stack: "c", Error: "stack c: the API server at https://127.0.0.1:1 refused the connection\nmore"},
		{Stack: "b", Report: drifted},
		{Stack: "a", Report: clean},
	}}
	f.Sort()
	return f
}

func TestFleetStatusesAndExit(t *testing.T) {
	f := fleetOf()
	got := []string{}
	for _, s := range f.Stacks {
		got = append(got, s.Stack+"="+s.Status())
	}
	if strings.Join(got, ",") != "a=clean,b=drifted,c=error" {
		t.Fatalf("statuses %v", got)
	}
	if f.ExitCode() != 1 {
		t.Errorf("an unchecked stack must exit 1, got %d", f.ExitCode())
	}
	f.Stacks = f.Stacks[:2]
	if f.ExitCode() != 2 {
		t.Errorf("a drifted stack must exit 2, got %d", f.ExitCode())
	}
	f.Stacks = f.Stacks[:1]
	if f.ExitCode() != 0 {
		t.Errorf("all clean must exit 0, got %d", f.ExitCode())
	}
}

func TestFleetWriters(t *testing.T) {
	f := fleetOf()
	var text bytes.Buffer
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 stacks: 1 clean, 1 drifted, 1 could not be checked", "drifted  b", "error    c", "refused the connection …", `stack "b"`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := f.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Exit   int `json:"exitCode"`
		Stacks []struct {
			Stack, Status string
			Differences   int
		} `json:"stacks"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Exit != 1 || len(decoded.Stacks) != 3 || decoded.Stacks[1].Status != "drifted" || decoded.Stacks[1].Differences != 1 {
		t.Errorf("json: %+v", decoded)
	}
	var md bytes.Buffer
	if err := f.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| `b` | ❌ drifted |") || !strings.Contains(md.String(), "## Paddock drift: ❌ drift") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
