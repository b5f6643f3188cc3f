package s3test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestStartServesLoopbackAndCleansUp(t *testing.T) {
	var dir string
	t.Run("server", func(t *testing.T) {
		s := Start(t)
		dir = s.dir
		if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") {
			t.Errorf("not on loopback: %s", s.Endpoint)
		}
		bucket := s.NewBucket(t)
		ctx := context.Background()
		c := s.Client()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("a/b.json"), Body: bytes.NewReader([]byte(`{"x":1}`))}); err != nil {
			t.Fatal(err)
		}
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("a/b.json")})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if string(b) != `{"x":1}` {
			t.Errorf("read back %q", b)
		}
		// Only the identity it was given gets in.
		if _, err := s.clientWith("not-the-secret-key").GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("a/b.json")}); err == nil {
			log, _ := os.ReadFile(filepath.Join(s.dir, "weed.log"))
			t.Errorf("a wrong secret key was let in; weed's log:\n%s", tail(string(log), 3000))
		}
		// The readiness probe left no bucket behind, and a probe after one
		// that made its bucket and failed to write finds it and goes on.
		list, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range list.Buckets {
			if aws.ToString(b.Name) == probeBucket {
				t.Errorf("the readiness probe's bucket %s is still there", probeBucket)
			}
		}
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(probeBucket)}); err != nil {
			t.Fatal(err)
		}
		if err := writeProbe(ctx, c); err != nil {
			t.Errorf("a probe with its bucket already made: %v", err)
		}
		if u := s.BackendURL(bucket, "team/a"); !strings.HasPrefix(u, "s3://"+bucket+"/team/a?") || !strings.Contains(u, "s3ForcePathStyle=true") {
			t.Errorf("BackendURL: %s", u)
		}
	})
	if dir == "" {
		return // skipped
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the server's directory %s is still there: %v", dir, err)
	}
}
