package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"testing"
)

// BenchmarkGatewayRequest is one small GET through the gateway (plain HTTP
// in, TLS out, kept-alive connections on both sides), all on loopback.
func BenchmarkGatewayRequest(b *testing.B) {
	e := newEnv(b)
	e.gw.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	c := e.client(sandboxA)
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+sandboxToken)
	getLoop(b, c, req)
}

// BenchmarkDirectRequest is the same GET straight to the TLS server: the
// baseline the gateway's overhead is read against.
func BenchmarkDirectRequest(b *testing.B) {
	e := newEnv(b)
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.cert)
	c := &http.Client{Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "api.test"},
	}}
	req, _ := http.NewRequest(http.MethodGet, e.up.srv.URL+"/v1/models", nil)
	getLoop(b, c, req)
}

// getLoop sends req through c once per iteration, reading every answer
// whole; each must be 200, through the gateway or straight to the server.
func getLoop(b *testing.B, c *http.Client, req *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}
