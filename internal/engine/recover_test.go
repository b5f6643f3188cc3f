package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/paths"
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

// A run killed while the file backend rewrote a sidecar leaves it empty, and
// Pulumi then fails to read the whole blob ("failed to load checkpoint: EOF"):
// seen on a loaded machine when a SIGKILL landed mid-checkpoint. The repair
// removes exactly the sidecars that do not parse, and Pulumi reads the stack
// again.
func TestRepairSidecarsRemovesOnlyHalfWrittenOnes(t *testing.T) {
	e, file := fileStack(t, goodCheckpoint, goodCheckpoint)
	root := strings.TrimPrefix(e.opts.Backend, "file://")
	lockDir := filepath.Join(root, ".pulumi", "locks", "organization", ProjectName, "s")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	whole := `{"user.content_type":"application/octet-stream","md5":"AAAA"}` + "\n"
	files := map[string]string{
		file + ".attrs":                                   "",               // truncated: the failure seen
		file + ".bak.attrs":                               whole,            // intact: kept
		filepath.Join(lockDir, "x.json.attrs"):            `{"user.content`, // torn
		filepath.Join(root, ".pulumi", "meta.yaml.attrs"): whole,
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs := &fileStore{root: root}
	got := fs.repairSidecars()
	want := map[string]bool{file + ".attrs": true, filepath.Join(lockDir, "x.json.attrs"): true}
	if len(got) != len(want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	for _, p := range got {
		if !want[p] {
			t.Errorf("removed %s, which was whole", p)
		}
	}
	for p, body := range files {
		_, err := os.Stat(p)
		if want[p] != os.IsNotExist(err) {
			t.Errorf("%s (%q): exists=%v after the repair", p, body, err == nil)
		}
	}
	if again := fs.repairSidecars(); len(again) != 0 {
		t.Errorf("a second repair removed %v", again)
	}
}

// The pinned Pulumi CLI itself cannot read a stack whose checkpoint's sidecar
// is empty, and reads it once the repair ran: the repair fixes what Pulumi trips
// on, not only what the test above builds.
func TestPulumiReadsTheStackAfterTheSidecarRepair(t *testing.T) {
	cli, err := paths.Tool("pulumi")
	if err != nil {
		t.Skipf("the pinned Pulumi CLI is not built (make tools): %v", err)
	}
	e, file := fileStack(t, `{"version":3,"checkpoint":{"stack":"organization/`+ProjectName+`/s","latest":{"manifest":{"time":"2026-12-05T00:00:00Z","magic":"","version":""}}}}`, "")
	root := strings.TrimPrefix(e.opts.Backend, "file://")
	if err := os.WriteFile(filepath.Join(root, ".pulumi", "meta.yaml"), []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file + ".bak"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".attrs", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	export := func() (string, error) {
		cmd := exec.Command(cli, "stack", "export", "--stack", "organization/"+ProjectName+"/s", "--non-interactive")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PULUMI_BACKEND_URL=file://"+root, "PULUMI_HOME="+t.TempDir(),
			"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_CONFIG_PASSPHRASE=x")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := export(); err == nil || !strings.Contains(out, "EOF") {
		t.Fatalf("with an empty sidecar, pulumi stack export: %v\n%s\n(want it to fail on EOF, as the killed runs did)", err, out)
	}
	if removed := (&fileStore{root: root}).repairSidecars(); len(removed) != 1 {
		t.Fatalf("repair removed %v, want the checkpoint's sidecar", removed)
	}
	if out, err := export(); err != nil {
		t.Fatalf("after the repair, pulumi stack export: %v\n%s", err, out)
	}
}
