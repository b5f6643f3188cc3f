package termtext

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	text := strings.Repeat("word ", 50) + strings.Repeat("x", 230) + " tail\nsecond paragraph"
	out := Wrap(text, "  - ", "    ")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		if len(l) > Width {
			t.Errorf("line %d: %d columns", i+1, len(l))
		}
		if i > 0 && !strings.HasPrefix(l, "    ") {
			t.Errorf("line %d lacks the indent: %q", i+1, l)
		}
	}
	if !strings.HasPrefix(out, "  - word word") {
		t.Errorf("first line %q", lines[0])
	}
	if got := strings.Join(strings.Fields(out), ""); got != strings.Join(strings.Fields("- "+text), "") {
		t.Errorf("words lost or changed:\n%s", out)
	}
	if Wrap("short", "", "") != "short\n" {
		t.Errorf("short text changed: %q", Wrap("short", "", ""))
	}
}
