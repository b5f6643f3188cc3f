package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Direct destroy reads the stack's deployment from its checkpoint file, not
// from `pulumi stack export`: what it reads must be what the real CLI
// exports, but for secrets, which stay ciphertext (the Automation API's
// export decrypts them all, and nothing in the plan reads them).
func TestExportStateIsWhatTheCLIExports(t *testing.T) {
	home := engineHome(t)
	t.Setenv("PADDOCK_HOME", home)
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	ctx := context.Background()
	backend := "file://" + t.TempDir()
	var said strings.Builder
	e := New(Options{Backend: backend, Stack: "s", Out: &said, Program: func(ctx *pulumi.Context) error {
		ctx.Export("spec", pulumi.String("v1"))
		ctx.Export("token", pulumi.ToSecret(pulumi.String("not-for-printing")))
		return nil
	}})
	defer e.Close()
	if _, err := e.Up(ctx, noClusterPlatform(t)); err != nil {
		t.Fatalf("up: %v\n%s", err, said.String())
	}
	s := e.opened["s"]
	fromFile, err := e.exportState(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	fromCLI, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fromFile.Version != fromCLI.Version {
		t.Errorf("version %d from the file, %d from the CLI", fromFile.Version, fromCLI.Version)
	}
	var a, b any
	if err := json.Unmarshal(fromFile.Deployment, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromCLI.Deployment, &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(fromFile.Deployment), "not-for-printing") || !strings.Contains(string(fromFile.Deployment), "ciphertext") {
		t.Errorf("the deployment read from the file holds a secret in plain text, or no secret at all: %s", fromFile.Deployment)
	}
	if !reflect.DeepEqual(secretsHidden(a), secretsHidden(b)) {
		t.Errorf("the deployment read from the file differs from the CLI's export:\nfile: %s\ncli:  %s", fromFile.Deployment, fromCLI.Deployment)
	}
	if len(a.(map[string]any)["resources"].([]any)) == 0 {
		t.Error("the export holds no resources: nothing was compared")
	}
}

// secretsHidden is v with every secret value, plain or encrypted, replaced
// by one marker.
func secretsHidden(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["4dabf18193072939515e22adb298388d"]; ok {
			return "[secret]"
		}
		out := map[string]any{}
		for k, x := range v {
			out[k] = secretsHidden(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = secretsHidden(x)
		}
		return out
	}
	return v
}
