package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestAuditLine(t *testing.T) {
	e := newEnv(t)
	res := e.do(sandboxA, http.MethodPost, "api.test", "/v1/chat?api_key=query-secret-999&x=1",
		strings.NewReader(`{"prompt":"body-secret-777"}`), http.Header{"Authorization": {"Bearer " + sandboxToken}})
	if res.status != http.StatusOK {
		t.Fatalf("request: %d", res.status)
	}
	e.get(sandboxB, "nowhere.test", "/refused?q=query-secret-888")
	lines := e.auditLines()
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want one per request:\n%s", len(lines), e.logs.String())
	}
	want := map[string]any{
		"sandbox": "sandbox-a", "claim": "claim-a", "pod": "sandbox-a", "namespace": "tenant-a", "destination": "api.test",
		"method": "POST", "path": "/v1/chat", "status": float64(200),
		"bytes_in": float64(len(`{"prompt":"body-secret-777"}`)), "bytes_out": float64(len("hello from upstream\n")),
		"caller_addr": sandboxA,
	}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("audit %s = %v (%T), want %v", k, lines[0][k], lines[0][k], v)
		}
	}
	if _, ok := lines[0]["duration_ms"].(float64); !ok {
		t.Errorf("audit line has no duration: %v", lines[0])
	}
	if lines[1]["sandbox"] != "sandbox-b" || lines[1]["status"] != float64(403) || lines[1]["reason"] == nil {
		t.Errorf("the refusal's audit line: %v", lines[1])
	}
	all := e.logs.String()
	for _, secret := range []string{testKey, sandboxToken, "query-secret", "body-secret", "api_key"} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
}

func TestKeyNeverInResponsesLogsOrErrors(t *testing.T) {
	closed := closedPort(t)
	e := newEnv(t, func(c *Config, _ *env) {
		for _, host := range []string{"unresolved.test", "closed.test"} {
			d := c.Destinations[0]
			d.Host, d.Port = host, closed
			c.Destinations = append(c.Destinations, d)
		}
	})
	e.dns.set("closed.test", []string{"127.0.0.1"})
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		// An upstream that echoes the key: in a header, a cookie, and a
		// body streamed so that the key straddles two writes.
		w.Header().Set("X-Echo", "you sent "+auth)
		w.Header().Set("Set-Cookie", "s="+auth)
		w.WriteHeader(http.StatusUnauthorized)
		half := len(auth) / 2
		io.WriteString(w, `{"error":"bad key `+auth[:half])
		w.(http.Flusher).Flush()
		io.WriteString(w, auth[half:]+`"}`)
	}
	res := e.get(sandboxA, "api.test", "/echo")
	if res.status != http.StatusUnauthorized {
		t.Fatalf("echo: %d", res.status)
	}
	if strings.Contains(res.body, testKey) || !strings.Contains(res.body, "bad key Bearer "+strings.Repeat("*", len(testKey))) {
		t.Errorf("echoed body %q: the key must be masked byte for byte", res.body)
	}
	if strings.Contains(res.header.Get("X-Echo"), testKey) || res.header.Get("Set-Cookie") != "" {
		t.Errorf("echoed headers %v: key masked, Set-Cookie dropped", res.header)
	}
	// Failures: no such name, nothing listening, unlisted, unknown caller,
	// IP literal.
	for _, tc := range []struct {
		r    response
		want int
		why  string
	}{
		{e.get(sandboxA, "unresolved.test", "/"), http.StatusBadGateway, "did not resolve"},
		{e.get(sandboxA, "closed.test", "/"), http.StatusBadGateway, "unreachable"},
		{e.get(sandboxA, "nowhere.test", "/"), http.StatusForbidden, "not a destination"},
		{e.get(stranger, "api.test", "/"), http.StatusForbidden, "unknown caller"},
		{e.get(sandboxA, "127.0.0.1", "/"), http.StatusForbidden, "IP literal"},
	} {
		if tc.r.status != tc.want || !strings.Contains(tc.r.body, tc.why) {
			t.Errorf("failure answered %d %q, want %d saying %q", tc.r.status, tc.r.body, tc.want, tc.why)
		}
		if strings.Contains(tc.r.body, testKey) || len(tc.r.body) > 200 {
			t.Errorf("an error response says too much: %d %q", tc.r.status, tc.r.body)
		}
	}
	if strings.Contains(e.logs.String(), testKey) {
		t.Errorf("the log holds the key:\n%s", e.logs.String())
	}
}

func TestErrorTextMasked(t *testing.T) {
	// A transport error that quotes the key (say, a library echoing a header)
	// is masked before it is logged.
	e := newEnv(t)
	cs := e.gw.creds.Load()
	rec := &auditRecord{}
	st := &requestState{dest: e.gw.dests["api.test"], rec: rec, creds: cs}
	r, _ := http.NewRequestWithContext(context.WithValue(context.Background(), ctxKey{}, st), http.MethodGet, "/", nil)
	w := &responseRecorder{ResponseWriter: &discardWriter{h: http.Header{}}, creds: cs}
	e.gw.proxyError(w, r, errors.New("upstream said: invalid header Bearer "+testKey))
	if strings.Contains(rec.err, testKey) || !strings.Contains(rec.err, "****") || w.status != http.StatusBadGateway {
		t.Errorf("error recorded as %q with status %d", rec.err, w.status)
	}
}

// closedPort is a loopback port with nothing listening.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

func TestMaskingReaderSplitsAndEnds(t *testing.T) {
	cs := &credentialSet{}
	cs.add("SECRET-KEY-1")
	cs.add("other-secret-22")
	in := "a SECRET-KEY-1 b other-secret-22 c SECRET-KEY-1SECRET-KEY-1 end SECRET-KEY-"
	want := "a ************ b *************** c ************************ end SECRET-KEY-"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"half":     iotest.HalfReader(strings.NewReader(in)),
	} {
		got, err := io.ReadAll(newMaskingReader(r, cs))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	// A reader's error comes after its bytes.
	boom := errors.New("boom")
	got, err := io.ReadAll(newMaskingReader(io.MultiReader(strings.NewReader("abc SECRET-KEY-1"), iotest.ErrReader(boom)), cs))
	if string(got) != "abc ************" || !errors.Is(err, boom) {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestBasicAuthCredential(t *testing.T) {
	dir := t.TempDir()
	user, pass := filepath.Join(dir, "user"), filepath.Join(dir, "pass")
	os.WriteFile(user, []byte("robot\n"), 0o600)
	os.WriteFile(pass, []byte("basic-password-42\n"), 0o600)
	e := newEnv(t, func(c *Config, _ *env) {
		c.Destinations[0].Credential = &Credential{BasicAuth: &BasicAuth{UserFile: user, PasswordFile: pass}}
	})
	if res := e.do(sandboxA, http.MethodGet, "api.test", "/", nil, http.Header{"Authorization": {"Basic c2FuZGJveDpvd24="}}); res.status != http.StatusOK {
		t.Fatalf("basic-auth destination: %d", res.status)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("robot:basic-password-42"))
	if got := e.up.requests()[0].Header.Values("Authorization"); len(got) != 1 || got[0] != want {
		t.Errorf("upstream Authorization %q, want %q", got, want)
	}
}

func TestCredentialReload(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.cfg.Destinations[0].Credential.KeyFile, []byte("sk-rotated-key-000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.gw.ReloadCredentials(); err != nil {
		t.Fatal(err)
	}
	e.get(sandboxA, "api.test", "/")
	if got := e.up.requests()[0].Header.Get("Authorization"); got != "Bearer sk-rotated-key-000000" {
		t.Errorf("after a reload, upstream got %q", got)
	}
	// A bad file keeps the credential in use, and the error names the file only.
	os.WriteFile(e.cfg.Destinations[0].Credential.KeyFile, []byte("short"), 0o600)
	err := e.gw.ReloadCredentials()
	if err == nil || strings.Contains(err.Error(), "short\"") {
		t.Errorf("reload of a 5-byte key: %v", err)
	}
	e.get(sandboxA, "api.test", "/")
	if got := e.up.requests()[1].Header.Get("Authorization"); got != "Bearer sk-rotated-key-000000" {
		t.Errorf("after a failed reload, upstream got %q", got)
	}
}

// fakeReviewer accepts one token per sandbox for one audience.
type fakeReviewer map[string]Caller

func (f fakeReviewer) Review(_ context.Context, token, audience string) (Caller, error) {
	if c, ok := f[token]; ok && audience == "paddock-gateway" {
		return c, nil
	}
	return Caller{}, ErrUnknownCaller
}

func TestTokenReviewIdentifies(t *testing.T) {
	e := newEnv(t, func(c *Config, e *env) {
		c.Identify = Identify{Mode: IdentifyTokenReview, Audience: "paddock-gateway"}
		c.Budgets.RequestsPerMinute = 1
		e.reviewer = fakeReviewer{"token-a": {Sandbox: "sandbox-a", Claim: "claim-a"}, "token-b": {Sandbox: "sandbox-b"}}
	})
	as := func(tok string) http.Header { return http.Header{"Proxy-Authorization": {"Bearer " + tok}} }
	// All from one address: the token, not the address, names the sandbox.
	if res := e.do(stranger, http.MethodGet, "api.test", "/", nil, as("token-a")); res.status != http.StatusOK {
		t.Fatalf("a reviewed token: %d", res.status)
	}
	if res := e.do(stranger, http.MethodGet, "api.test", "/", nil, as("token-a")); res.status != http.StatusTooManyRequests {
		t.Errorf("sandbox-a's second request of a 1/min budget: %d, want 429", res.status)
	}
	if res := e.do(stranger, http.MethodGet, "api.test", "/", nil, as("token-b")); res.status != http.StatusOK {
		t.Errorf("sandbox-b from the same address: %d, want 200", res.status)
	}
	for _, h := range []http.Header{nil, as("forged"), {"Authorization": {"Bearer token-a"}}} {
		if res := e.do(stranger, http.MethodGet, "api.test", "/", nil, h); res.status != http.StatusForbidden {
			t.Errorf("no or a bad token (%v): %d, want 403", h, res.status)
		}
	}
	for _, r := range e.up.requests() {
		if v := r.Header.Get("Proxy-Authorization"); v != "" {
			t.Errorf("the token went upstream: %q", v)
		}
	}
	if _, err := New(e.cfg, Options{}); err == nil {
		t.Errorf("tokenReview mode without a reviewer was accepted")
	}
}
