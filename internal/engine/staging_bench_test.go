package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/internal/state"
)

// BenchmarkStagedUp measures what staging.go adds to one Pulumi update:
// the same `up` of the same stack through the same workspace, with a run
// holding the stack (its record written, its fence taken) either way; once
// with the CLI on the shared backend (direct) and once staged. The state
// holds a stack output of the given size, so the copy's cost shows.
//
//	go test -run '^$' -bench StagedUp -benchtime 5x ./internal/engine/
func BenchmarkStagedUp(b *testing.B) {
	cli, err := paths.Tool("pulumi")
	if err != nil {
		b.Skip(err)
	}
	installed := filepath.Dir(filepath.Dir(cli))
	backends := []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"file", func(b *testing.B) string { return "file://" + b.TempDir() }},
		{"s3", func(b *testing.B) string {
			srv := s3test.Shared(b)
			srv.SetEnv(b)
			return srv.BackendURL(srv.NewBucket(b), "")
		}},
	}
	for _, be := range backends {
		for _, kib := range []int{1, 2048} {
			for _, staged := range []bool{false, true} {
				mode := "direct"
				if staged {
					mode = "staged"
				}
				b.Run(fmt.Sprintf("%s/%dKiB/%s", be.name, kib, mode), func(b *testing.B) {
					home := b.TempDir()
					os.Symlink(filepath.Join(installed, "bin"), filepath.Join(home, "bin"))
					os.MkdirAll(filepath.Join(home, "pulumi"), 0o700)
					os.Symlink(filepath.Join(installed, "pulumi", "plugins"), filepath.Join(home, "pulumi", "plugins"))
					b.Setenv("PADDOCK_HOME", home)
					b.Setenv("PULUMI_CONFIG_PASSPHRASE", "bench-passphrase")
					blob := strings.Repeat("x", kib<<10)
					prog := func(ctx *pulumi.Context) error {
						ctx.Export("blob", pulumi.String(blob))
						return nil
					}
					e := New(Options{Backend: be.url(b), Stack: "s", Program: prog})
					defer e.Close()
					ctx := context.Background()
					p := noClusterPlatform(b)
					s, err := e.stack(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Up(ctx); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for b.Loop() {
						rec, err := e.beginRecord("up", "s", "s", nil)
						if err != nil {
							b.Fatal(err)
						}
						unfence, err := e.takeFence("s", rec)
						if err != nil {
							b.Fatal(err)
						}
						if !staged {
							unfence()
						}
						if _, err := s.Up(ctx, optup.Refresh()); err != nil {
							b.Fatal(err)
						}
						unfence()
						if err := rec.end(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkStagingOverhead is what staging.go does per staged command
// beside the CLI, without the CLI's own noise: take the shared lock, seed
// the staging backend, copy back one checkpoint the CLI wrote, release.
//
//	go test -run '^$' -bench StagingOverhead ./internal/engine/
func BenchmarkStagingOverhead(b *testing.B) {
	backends := []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"file", func(b *testing.B) string { return "file://" + b.TempDir() }},
		{"s3", func(b *testing.B) string {
			srv := s3test.Shared(b)
			srv.SetEnv(b)
			return srv.BackendURL(srv.NewBucket(b), "")
		}},
	}
	for _, be := range backends {
		for _, kib := range []int{1, 2048} {
			b.Run(fmt.Sprintf("%s/%dKiB", be.name, kib), func(b *testing.B) {
				backend := be.url(b) // before PADDOCK_HOME moves: weed is found there
				b.Setenv("PADDOCK_HOME", b.TempDir())
				e := New(Options{Backend: backend, Stack: "s"})
				defer e.Close()
				s, err := e.store()
				if err != nil {
					b.Fatal(err)
				}
				rec, err := e.beginRecord("up", "s", "s", nil)
				if err != nil {
					b.Fatal(err)
				}
				defer rec.abandon()
				defer e.stageStack("s", rec, s)()
				st := e.stageOf("s")
				key := "stacks/paddock/s.json"
				body := func(i int) []byte {
					return []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", kib<<10)))
				}
				ctx := context.Background()
				if _, err := st.swap.SwapCheckpoint(ctx, "paddock", "s", ".pulumi/"+key, body(0), state.CheckpointVersion{}); err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					i++
					release, _, err := e.lockForRepair("s")
					if err != nil || release == nil {
						b.Fatal("lock", err)
					}
					g, err := st.seed(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := os.WriteFile(g.file(".pulumi/"+key), body(i), 0o600); err != nil {
						b.Fatal(err)
					}
					if err := g.sync(); err != nil {
						b.Fatal(err)
					}
					g.remove()
					release()
				}
			})
		}
	}
}
