// Package s3test starts a throwaway S3 server for tests: SeaweedFS's weed
// (built by `make tools-test` into $PADDOCK_HOME/bin) as `weed server -s3`,
// every port on 127.0.0.1 and chosen free, its data in a fresh directory,
// one identity (an access key and a secret key made up for the run), stopped
// and removed in the test's cleanup. Its telemetry is off: nothing leaves
// the machine. A missing weed skips the test, except in CI (CI=true), where
// `make tools-test` builds it: there it fails it.
//
// Start it before the test moves PADDOCK_HOME: weed is looked up there. A
// package whose tests each need only a bucket shares one server (Shared).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/paths"
)

// BinEnv names the weed binary, overriding $PADDOCK_HOME/bin/weed.
const BinEnv = "PADDOCK_WEED_BIN"

// Region is the region the server's clients name (SeaweedFS takes any).
const Region = "us-east-1"

// Server is one running S3 server.
type Server struct {
	// Endpoint is the S3 gateway's URL (http://127.0.0.1:PORT).
	Endpoint  string
	AccessKey string
	SecretKey string
	dir       string
}

// findWeed is the weed binary: $PADDOCK_WEED_BIN, else the one `make
// tools-test` built.
func findWeed() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		return p, nil
	}
	p, err := paths.Tool("weed")
	if err != nil {
		return "", fmt.Errorf("SeaweedFS's weed is not built (%v); `make tools-test` builds it, or set %s", err, BinEnv)
	}
	return p, nil
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, stop, err := launch()
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(stop)
	return s
}

// The server Shared hands out: started by the first test that asks, kept
// for the package's other tests (each takes a bucket of its own), stopped
// by StopShared from TestMain.
var shared struct {
	sync.Mutex
	s    *Server
	stop func()
	err  error
}

// Shared is the package's one server, started on first use: a test that
// needs only a bucket of its own does not pay for a server start (weed
// takes seconds). Call StopShared after m.Run in TestMain.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.s == nil && shared.err == nil {
		shared.s, shared.stop, shared.err = launch()
	}
	if shared.err != nil {
		fail(t, shared.err)
	}
	return shared.s
}

// StopShared stops the server Shared started, if any.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.stop != nil {
		shared.stop()
		shared.stop = nil
	}
}

// errNoWeed is launch's error when weed is not built.
type errNoWeed struct{ error }

// fail ends t on a launch error: a missing weed skips, except in CI
// (CI=true), where `make tools-test` builds it.
func fail(t testing.TB, err error) {
	t.Helper()
	if _, missing := err.(errNoWeed); missing {
		if os.Getenv("CI") == "true" {
			t.Fatalf("s3test: %v (CI builds the test tools, so this is a failure)", err)
		}
		t.Skipf("s3test: %v; not in CI, so skipping", err)
	}
	t.Fatalf("s3test: %v", err)
}

// Launch starts a server outside a test (the benchmark's); stop stops it
// and removes its files. A weed not built is ErrNotBuilt.
func Launch() (s *Server, stop func(), err error) { return launch() }

// ErrNotBuilt is Launch's error when weed is not built.
var ErrNotBuilt = errors.New("SeaweedFS's weed is not built: `make tools-test` builds it, or set " + BinEnv)

// Is makes errors.Is(err, ErrNotBuilt) true of a missing weed.
func (errNoWeed) Is(target error) bool { return target == ErrNotBuilt }

// launch starts a server; stop stops it and removes its files.
func launch() (*Server, func(), error) {
	weed, err := findWeed()
	if err != nil {
		return nil, nil, errNoWeed{err}
	}
	dir, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		return nil, nil, err
	}
	s := &Server{AccessKey: "PADDOCK" + strings.ToUpper(randomHex(6)), SecretKey: randomHex(20), dir: dir}
	config, err := json.Marshal(map[string]any{"identities": []any{map[string]any{
		"name":        "paddock-test",
		"credentials": []any{map[string]string{"accessKey": s.AccessKey, "secretKey": s.SecretKey}},
		"actions":     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "s3.json"), config, 0o600)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "data"), 0o700)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	for range 3 { // another process can bind a port between its choosing and weed's start
		var stop func()
		if stop, err = s.run(weed); err == nil {
			return s, func() { stop(); os.RemoveAll(dir) }, nil
		}
	}
	os.RemoveAll(dir)
	return nil, nil, err
}

func (s *Server) run(weed string) (func(), error) {
	// Below the ephemeral range: weed runs master, volume, filer and S3
	// servers in one process, and one whose port an outgoing connection
	// took would leave the others serving and every write failing (500).
	ports, err := loopbackport.Free(8)
	if err != nil {
		return nil, err
	}
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(ports[6])
	logFile := filepath.Join(s.dir, "weed.log")
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	// weed's own logs go to its directory, not to /tmp. Each bucket is a
	// collection with volumes of its own, so a shared server needs room for
	// many (64 MB each, none preallocated).
	args := []string{"-logdir=" + s.dir, "server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-dir=" + filepath.Join(s.dir, "data"),
		"-master.port=" + p(0), "-master.port.grpc=" + p(1),
		"-master.volumeSizeLimitMB=64", "-master.telemetry=false",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3), "-volume.max=64",
		"-filer", "-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-filer.localSocket=" + filepath.Join(s.dir, "filer.sock"),
		"-s3", "-s3.port=" + p(6), "-s3.port.grpc=" + p(7),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.localSocket=" + filepath.Join(s.dir, "s3.sock"),
		"-s3.config=" + filepath.Join(s.dir, "s3.json"),
	}
	// At the caller's priority: weed's first write (volumes grown for the
	// bucket, through its master's heartbeats) stalls for minutes when it
	// is starved beside the e2e suite.
	cmd := exec.Command(weed, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting weed: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// weed puts the sockets of its gRPC services in /tmp whatever it
		// is told: remove this server's.
		for _, svc := range []struct {
			name string
			port int
		}{{"master", ports[1]}, {"volume", ports[3]}, {"filer", ports[5]}, {"s3", ports[7]}} {
			os.Remove(fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", svc.name, svc.port))
		}
	}
	client := s.Client()
	deadline := time.Now().Add(120 * time.Second)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logFile)
			return nil, fmt.Errorf("weed exited (%v):\n%s", err, tail(string(b), 2000))
		default:
		}
		// Ready when an object can be written and read back: the gateway,
		// the filer behind it and a volume server that took a volume.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := writeProbe(ctx, client)
		cancel()
		if err == nil {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(logFile)
			return nil, fmt.Errorf("weed's S3 gateway took no write in 120s (%v):\n%s", err, tail(string(b), 2000))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// probeBucket is the bucket launch writes to before handing the server out.
const probeBucket = "paddock-ready-probe"

// writeProbe writes an object and reads it back, then removes both it and
// its bucket, so the server's buckets are the tests' alone.
func writeProbe(ctx context.Context, c *s3.Client) error {
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		return err
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(probeBucket)}); err != nil {
		// Made by an earlier try whose write failed.
		var owned *types.BucketAlreadyOwnedByYou
		var exists *types.BucketAlreadyExists
		if !errors.As(err, &owned) && !errors.As(err, &exists) {
			return err
		}
	}
	key := aws.String("probe")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(probeBucket), Key: key, Body: strings.NewReader("ok")}); err != nil {
		return err
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(probeBucket), Key: key})
	if err != nil {
		return err
	}
	got.Body.Close()
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(probeBucket), Key: key}); err != nil {
		return err
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(probeBucket)})
	return err
}

// Client is an S3 client of the server, with its identity.
func (s *Server) Client() *s3.Client { return s.clientWith(s.SecretKey) }

func (s *Server) clientWith(secretKey string) *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, secretKey, ""),
		// SeaweedFS, like most stores that are not AWS, wants no checksum it
		// did not ask for.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewBucket creates an empty bucket and returns its name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name, err := s.CreateBucket(context.Background())
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return name
}

// CreateBucket creates an empty bucket outside a test and returns its name.
func (s *Server) CreateBucket(ctx context.Context) (string, error) {
	name := "t-" + randomHex(6)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", fmt.Errorf("creating bucket %s: %w", name, err)
	}
	return name, nil
}

// BackendURL is the Pulumi backend URL of path in bucket (path may be
// empty), as a user would write it for this server.
func (s *Server) BackendURL(bucket, path string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", Region)
	q.Set("s3ForcePathStyle", "true")
	u := url.URL{Scheme: "s3", Host: bucket, Path: strings.TrimSuffix("/"+strings.TrimPrefix(path, "/"), "/"), RawQuery: q.Encode()}
	return u.String()
}

// Env is the environment a client of the server needs: its identity in the
// standard AWS variables, and no instance metadata lookups (nothing to ask,
// and nothing is to leave the machine).
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(s.dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(s.dir, "no-aws-credentials"),
	}
}

// SetEnv sets Env in t's environment (t.Setenv: not in parallel tests), and
// clears what would override it.
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
