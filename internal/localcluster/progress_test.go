package localcluster

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/paddock-platform/paddock/internal/termtext"
)

// local up's progress fits the terminal: a long message wraps, and a step's
// last line keeps room for the time that ends it.
func TestProgressFitsTheTerminal(t *testing.T) {
	var out bytes.Buffer
	c := &cluster{out: &out}
	long := strings.Repeat("cluster resolver kube-system/paddock-dns answers ", 5)
	c.progress("%s", long)
	done := c.step("preparing the host: %s", strings.Repeat("bridge pdk-d627f3a0 (10.213.215.0/24) ", 4))
	done(nil)
	failed := c.step("short step")
	failed(errors.New("x"))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > termtext.Width {
			t.Errorf("a line of %d characters: %q", n, l)
		}
		if strings.ContainsRune(l, '\u00a0') {
			t.Errorf("padding left in %q", l)
		}
	}
	if len(lines) < 5 || !regexp.MustCompile(`… [0-9.]+(ns|µs|ms|s)$`).MatchString(lines[len(lines)-2]) {
		t.Errorf("the step does not end with its time:\n%s", out.String())
	}
	if lines[len(lines)-1] != "short step… failed" {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}
