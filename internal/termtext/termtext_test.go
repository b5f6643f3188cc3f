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

func TestTable(t *testing.T) {
	out := Table([][]string{
		{"COMPONENT", "STATE", "DETAIL"},
		{"kube-apiserver", "running", "short"},
		{"cilium-agent", "CRASHED", strings.Repeat("exited with a long reason ", 10)},
		{"x", "y", ""},
	})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "COMPONENT       STATE    DETAIL" || lines[1] != "kube-apiserver  running  short" {
		t.Errorf("columns not aligned:\n%s", out)
	}
	for i, l := range lines {
		if len(l) > Width {
			t.Errorf("line %d: %d columns", i+1, len(l))
		}
	}
	if !strings.HasPrefix(lines[3], strings.Repeat(" ", len("cilium-agent    CRASHED  "))+"reason") {
		t.Errorf("the detail does not wrap under its column:\n%s", out)
	}
	if lines[len(lines)-1] != "x               y" {
		t.Errorf("an empty last column leaves trailing space: %q", lines[len(lines)-1])
	}
}
