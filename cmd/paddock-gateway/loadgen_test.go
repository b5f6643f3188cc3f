package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/loadgen"
)

func TestLoadgenJSONWithCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(ca)
	// The CA from a file, and from standard input (-ca -).
	for _, c := range []struct {
		flag  string
		stdin io.Reader
	}{{ca, nil}, {"-", bytes.NewReader(caPEM)}} {
		loadgenStdin = c.stdin
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"loadgen", "-url", srv.URL + "/echo", "-ca", c.flag, "-c", "3", "-n", "30", "-json"}, &out, &errb)
		if code != 0 {
			t.Fatalf("-ca %s: exit %d: %s", c.flag, code, errb.String())
		}
		var r loadgen.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("the output is not one JSON result: %v\n%s", err, out.String())
		}
		if r.OK != 30 || r.Concurrency != 3 || len(r.Errors) != 0 || r.P95Ms <= 0 {
			t.Errorf("-ca %s: got %+v, want 30 answered by 3 workers", c.flag, r)
		}
	}
	loadgenStdin = os.Stdin
}

func TestLoadgenIdleWaitsForTheEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() { done <- run(ctx, []string{"loadgen", "-idle"}, &out, &errb) }()
	select {
	case code := <-done:
		t.Fatalf("-idle returned %d before its end: %s", code, errb.String())
	default:
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("-idle at SIGTERM: exit %d, want 0", code)
	}
}

func TestLoadgenTextReportsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused", http.StatusForbidden)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"loadgen", "-url", "http://dest.test/x", "-proxy", srv.URL, "-c", "1", "-n", "4"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "through "+srv.URL) || !strings.Contains(out.String(), "status_403 4") {
		t.Errorf("the summary does not say the path and the errors: %s", out.String())
	}
}

func TestLoadgenRefusesBadUse(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"loadgen", "-n", "1"}, 2, "usage"},
		{[]string{"loadgen", "-url", "http://x/"}, 2, "usage"},
		{[]string{"loadgen", "-url", "http://x/", "-n", "1", "extra"}, 2, "usage"},
		{[]string{"loadgen", "-url", "http://x/", "-n", "1", "-ca", notPEM}, 1, "holds no PEM certificate"},
		{[]string{"loadgen", "-url", "http://x/", "-n", "1", "-c", "0"}, 1, "concurrency 0"},
		{[]string{"loadgen", "-idle", "-url", "http://x/"}, 2, "usage"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.says) {
			t.Errorf("%v: exit %d, %q; want exit %d saying %q", c.args, code, errb.String(), c.code, c.says)
		}
	}
}
