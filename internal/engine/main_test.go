package engine

import (
	"os"
	"testing"

	"github.com/paddock-platform/paddock/internal/s3test"
)

// TestMain stops the S3 server the s3:// tests share (each takes a bucket
// of its own).
func TestMain(m *testing.M) {
	code := m.Run()
	s3test.StopShared()
	os.Exit(code)
}
