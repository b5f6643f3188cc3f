package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/hangguard"
	"github.com/paddock-platform/paddock/internal/loopbackport"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeConfig(t *testing.T, listen string) string {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("sk-cmd-test-key-0000\n"), 0o600)
	cfg := fmt.Sprintf(`{"listen": %q, "destinations": [{"host": "api.test", "credential": {"header": "x-api-key", "keyFile": %q}}]}`, listen, key)
	p := filepath.Join(dir, "gateway.json")
	os.WriteFile(p, []byte(cfg), 0o600)
	return p
}

func TestCheck(t *testing.T) {
	var out, errb bytes.Buffer
	p := writeConfig(t, ":8080")
	if code := run(context.Background(), []string{"-config", p, "-check"}, &out, &errb); code != 0 {
		t.Fatalf("-check: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "1 destinations") {
		t.Errorf("-check said %q", out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"listen": ":1", "destinations": [{"host": "10.0.0.1"}], "extra": true}`), 0o600)
	errb.Reset()
	if code := run(context.Background(), []string{"-config", bad, "-check"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), `unknown field "extra"`) {
		t.Errorf("a bad configuration: exit %d, %q", code, errb.String())
	}
	if code := run(context.Background(), nil, &out, &errb); code != 2 {
		t.Errorf("no -config: exit %d, want 2", code)
	}
}

// The binary serves the configuration and stops cleanly when told. Only an
// unlisted host is asked for: nothing leaves loopback.
func TestServeAndShutdown(t *testing.T) {
	ports, err := loopbackport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p := writeConfig(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"-config", p}, &out, &errb) }()

	var res *http.Response
	for range 200 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Host = "elsewhere.test"
		if res, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the gateway never answered: %v; stderr %s", err, errb.String())
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("unlisted host: %d %q, want 403", res.StatusCode, body)
	}
	cancel()
	if c := hangguard.Within(t, 30*time.Second, "shutdown", func() int { return <-code }); c != 0 {
		t.Errorf("exit %d after shutdown: %s", c, errb.String())
	}
	if !strings.Contains(out.String(), `"msg":"request"`) || !strings.Contains(out.String(), `"status":403`) {
		t.Errorf("no audit line for the request:\n%s", out.String())
	}
	if strings.Contains(out.String()+errb.String(), "sk-cmd-test-key") {
		t.Errorf("the key was printed")
	}
}
