package verify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/termtext"
)

// The text report fits 100 columns however long a title, subject or reason
// is (a path or a URL with no space included), and keeps every word.
func TestWriteTextFitsTheTerminal(t *testing.T) {
	long := strings.Repeat("a-very-long-word ", 40) + "https://" + strings.Repeat("x", 250) + " end"
	rep := &Report{Platform: "demo", Results: []Result{
		{ID: "V10", Title: strings.Repeat("title words ", 20), Subject: "agents-team-a named egress api.llm.paddock.test", Status: Pass, Reason: long},
		{ID: "V10", Title: strings.Repeat("title words ", 20), Subject: strings.Repeat("s", 130), Status: Fail, Reason: "short"},
		{ID: "V12", Title: "a sandbox holds its controls", Subject: "cluster", Status: NotVerifiable, Reason: ""},
	}}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for i, line := range strings.Split(text, "\n") {
		if len(line) > termtext.Width {
			t.Errorf("line %d is %d columns: %q", i+1, len(line), line)
		}
	}
	if strings.Count(text, "V10 title words") != 1 {
		t.Errorf("the V10 title is not written once:\n%s", text)
	}
	joined := strings.Join(strings.Fields(text), "")
	for _, want := range []string{"https://" + strings.Repeat("x", 250) + "end", "FAIL" + strings.Repeat("s", 130), "N/Acluster"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the text lost %.40q...:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "1 passed, 1 failed, 1 not verifiable here") {
		t.Errorf("no summary:\n%s", text)
	}
}
