package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/verify"
)

// --strict makes a check that is not verifiable here fail the run; without
// it, only failures do.
func TestVerifyExitStrict(t *testing.T) {
	passing := verify.Result{ID: "V01", Status: verify.Pass}
	unverifiable := verify.Result{ID: "V10", Status: verify.NotVerifiable, Reason: "kwok node"}
	failing := verify.Result{ID: "V09", Status: verify.Fail}
	cases := []struct {
		name    string
		results []verify.Result
		strict  bool
		code    int // 0: no error
		says    string
	}{
		{"all pass", []verify.Result{passing}, false, 0, ""},
		{"all pass, strict", []verify.Result{passing}, true, 0, ""},
		{"not verifiable", []verify.Result{passing, unverifiable}, false, 0, ""},
		{"not verifiable, strict", []verify.Result{passing, unverifiable}, true, 1, "0 check(s) failed, 1 not verifiable here (--strict counts them as failed)"},
		{"failed", []verify.Result{failing, unverifiable}, false, 1, "1 check(s) failed"},
		{"failed, strict", []verify.Result{failing, unverifiable}, true, 1, "1 check(s) failed, 1 not verifiable here"},
	}
	for _, c := range cases {
		rep := &verify.Report{Platform: "demo", Results: c.results, Strict: c.strict}
		err := verifyExit(rep)
		var ee *exitError
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("%s: %v, want success", c.name, err)
		case c.code != 0 && (!errors.As(err, &ee) || ee.code != c.code):
			t.Errorf("%s: %v, want exit %d", c.name, err, c.code)
		case c.code != 0 && !strings.Contains(err.Error(), c.says):
			t.Errorf("%s: %q does not say %q", c.name, err, c.says)
		}
	}
	var out bytes.Buffer
	rep := &verify.Report{Platform: "demo", Results: []verify.Result{unverifiable}, Strict: true}
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "strict: not verifiable counts as failed") {
		t.Errorf("the text report does not say it is strict:\n%s", out.String())
	}
}
