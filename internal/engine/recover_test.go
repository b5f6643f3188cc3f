package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileStack lays out a file backend with one stack's state and .bak.
func fileStack(t *testing.T, state, bak string) (*Engine, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, ".pulumi", "stacks", ProjectName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".bak", []byte(bak), 0o600); err != nil {
		t.Fatal(err)
	}
	return New(Options{Backend: "file://" + root}), file
}

const goodCheckpoint = `{"checkpoint":{"latest":{"resources":[{"urn":"u","type":"kubernetes:core/v1:Namespace","outputs":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"agents-a"}}}],"pending_operations":[{"type":"creating","resource":{"urn":"urn:pulumi:s::paddock::kubernetes:core/v1:Namespace::agents-b","type":"kubernetes:core/v1:Namespace"}}]}}}`

func TestCorruptStateIsReportedWithItsRecovery(t *testing.T) {
	e, file := fileStack(t, `{"checkpoint": {"latest": {"resour`, goodCheckpoint)
	_, err := e.checkState("s")
	var corrupt *CorruptStateError
	if err == nil || !strings.Contains(err.Error(), "paddock state restore --stack s") || !strings.Contains(err.Error(), "nothing was applied") {
		t.Fatalf("corrupt state: %v", err)
	}
	if !asCorrupt(err, &corrupt) || corrupt.File != file {
		t.Fatalf("not a CorruptStateError naming %s: %#v", file, err)
	}
}

func asCorrupt(err error, c **CorruptStateError) bool {
	ce, ok := err.(*CorruptStateError)
	*c = ce
	return ok
}

func TestRestoreStateOnlyReplacesACorruptState(t *testing.T) {
	e, file := fileStack(t, goodCheckpoint, goodCheckpoint)
	if _, _, err := e.RestoreState("s", false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over a readable state: %v", err)
	}

	e, file = fileStack(t, `{"torn`, goodCheckpoint)
	b, kept, err := e.RestoreState("s", false)
	if err != nil {
		t.Fatal(err)
	}
	if b.Resources != 1 || !strings.HasSuffix(b.File, "s.json.bak") {
		t.Errorf("restored %+v, want the .bak with 1 resource", b)
	}
	if got, _ := os.ReadFile(file); string(got) != goodCheckpoint {
		t.Errorf("state after restore: %s", got)
	}
	if old, _ := os.ReadFile(kept); string(old) != `{"torn` {
		t.Errorf("the corrupt state was not kept at %s: %q", kept, old)
	}
}

func TestInventoryAndPendingOperations(t *testing.T) {
	e, _ := fileStack(t, goodCheckpoint, goodCheckpoint)
	objs, pending, err := e.Inventory("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Kind != "Namespace" || objs[0].Name != "agents-a" {
		t.Errorf("inventory: %+v", objs)
	}
	if len(pending) != 1 || pending[0].Op != "creating" {
		t.Errorf("pending: %+v", pending)
	}
}

// The inventory reads only each object's identity: an output of another
// shape (a secret name, a status that is a string) leaves that object out
// rather than failing the stack's inventory, and never hides the others.
func TestInventoryReadsOddOutputsAsAbsent(t *testing.T) {
	const odd = `{"checkpoint":{"latest":{"resources":[` +
		`{"urn":"u1","type":"kubernetes:core/v1:Secret","outputs":{"apiVersion":"v1","kind":"Secret","metadata":{"name":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"v1:x"},"namespace":"agents-a"}}},` +
		`{"urn":"u2","type":"kubernetes:core/v1:ConfigMap","outputs":{"apiVersion":"v1","kind":"ConfigMap","metadata":"x","status":"odd"}},` +
		`{"urn":"u3","type":"kubernetes:core/v1:ConfigMap","outputs":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept","namespace":"agents-a","labels":{"a":"b"}},"data":{"k":"v"}}}` +
		`]}}}`
	e, _ := fileStack(t, odd, odd)
	objs, _, err := e.Inventory("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Name != "kept" || objs[0].Namespace != "agents-a" || objs[0].APIVersion != "v1" {
		t.Errorf("inventory %+v: want only the well-formed ConfigMap agents-a/kept", objs)
	}
}
