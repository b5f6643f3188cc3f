package s3state

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/state"
)

// These tests need no server: opening a bucket sends nothing until the
// first read. The store's reads and writes are tested through the engine,
// against SeaweedFS (engine's backend_s3_test.go).

func TestS3URLsOpenAsPulumiOpensThem(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cret-key-never-shown")
	t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "")
	ctx := context.Background()
	for _, tc := range []struct{ url, prefix string }{
		{"s3://b?region=us-east-1", ""},
		{"s3://b/?region=us-east-1", ""},
		{"s3://b/team/a?region=us-east-1&endpoint=http://127.0.0.1:9&s3ForcePathStyle=true", "team/a/"},
		{"s3://b/team/a/?region=us-east-1&use_path_style=true", "team/a/"},
		// gocloud.dev's own prefix parameter goes first, then Pulumi's path.
		{"s3://b/x?region=us-east-1&prefix=p/", "p/x/"},
	} {
		s, err := Open(ctx, tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if s.prefix != tc.prefix || s.name != "b" {
			t.Errorf("%s: bucket %q prefix %q, want b and %q", tc.url, s.name, s.prefix, tc.prefix)
		}
		if want := "s3://b/" + tc.prefix + ".paddock/runs/p/s/"; s.JournalWhere("p", "s") != want {
			t.Errorf("%s: journal at %q, want %q", tc.url, s.JournalWhere("p", "s"), want)
		}
		s.Close()
	}
	// The rewrites Pulumi makes of URLs written for the older SDK.
	for in, want := range map[string]string{
		"s3://b?endpoint=minio:9000&disableSSL=true":                           "disable_https=true&endpoint=http%3A%2F%2Fminio%3A9000&request_checksum_calculation=when_required",
		"s3://b?endpoint=minio:9000":                                           "endpoint=https%3A%2F%2Fminio%3A9000&request_checksum_calculation=when_required",
		"s3://b?endpoint=http://m:9000&disableSSL=true":                        "endpoint=http%3A%2F%2Fm%3A9000&request_checksum_calculation=when_required",
		"s3://b?region=eu-west-1":                                              "region=eu-west-1",
		"s3://b?endpoint=http://m&request_checksum_calculation=when_supported": "endpoint=http%3A%2F%2Fm&request_checksum_calculation=when_supported",
	} {
		u, _ := url.Parse(in)
		if err := s3LegacyParams(u); err != nil || u.RawQuery != want {
			t.Errorf("%s: %q %v, want %q", in, u.RawQuery, err, want)
		}
	}
	if _, err := Open(ctx, "s3:///nobucket"); err == nil {
		t.Error("a URL without a bucket opened")
	}
	if _, err := Open(ctx, "s3://b?region=us-east-1&no_such_param=1"); err == nil {
		t.Error("a parameter gocloud.dev refuses was accepted")
	}
}

func TestS3LeaseAgeIsNeverForever(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	written := now.Add(-90 * time.Second)
	if got := leaseAge(&written, now); got != 90*time.Second {
		t.Errorf("age %s", got)
	}
	if got := leaseAge(nil, now); got < state.LeaseExpiry {
		t.Errorf("a record without a LastModified is alive: age %s", got)
	}
	// No Date from the server: this runner's clock, still finite.
	old := time.Now().Add(-2 * state.LeaseExpiry)
	if got := leaseAge(&old, time.Time{}); got < state.LeaseExpiry {
		t.Errorf("without a Date the age is %s", got)
	}
	future := now.Add(time.Hour)
	if got := leaseAge(&future, now); got != 0 {
		t.Errorf("a record from the future: age %s", got)
	}
}
