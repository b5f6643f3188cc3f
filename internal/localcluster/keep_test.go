package localcluster

import (
	"bytes"
	"context"
	"errors"
	"log"
	"strings"
	"testing"
)

// keepEvery logs each change, and a lasting error once until it changes or
// clears; it stops when its context is done.
func TestKeepEveryLogsChangesAndEachNewErrorOnce(t *testing.T) {
	var buf bytes.Buffer
	n := &nodeRunner{log: log.New(&buf, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := []struct {
		did string
		err error
	}{
		{"", errors.New("down")}, {"", errors.New("down")}, {"", errors.New("down")},
		{"put back", nil}, {"", nil},
		{"", errors.New("down")}, {"", errors.New("other")},
	}
	i := 0
	n.keepEvery(ctx, 0, "thing", func() (string, error) {
		if i == len(steps) {
			cancel()
			return "", nil
		}
		s := steps[i]
		i++
		return s.did, s.err
	})
	want := "node: thing: down\nnode: put back\nnode: thing: down\nnode: thing: other\n"
	if got := buf.String(); got != want {
		t.Errorf("logged\n%s\nwant\n%s", got, want)
	}
	if i != len(steps) || !strings.Contains(buf.String(), "other") {
		t.Errorf("stopped after %d of %d calls", i, len(steps))
	}
}

func TestJoinNonEmpty(t *testing.T) {
	if got := joinNonEmpty("", "a", "", "b"); got != "a; b" {
		t.Errorf("got %q", got)
	}
	if got := joinNonEmpty("", ""); got != "" {
		t.Errorf("got %q", got)
	}
}
