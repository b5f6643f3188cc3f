package filestate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/paths"
)

// projectName is the Pulumi project of Paddock's stacks (engine.ProjectName).
const projectName = "paddock"

// fileStack lays out a file backend with one stack's state and .bak, and
// returns the backend's root and the state's file.
func fileStack(t *testing.T, state, bak string) (root, file string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, ".pulumi", "stacks", projectName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".bak", []byte(bak), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, file
}

const goodCheckpoint = `{"checkpoint":{"latest":{"resources":[{"urn":"u","type":"kubernetes:core/v1:Namespace","outputs":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"agents-a"}}}],"pending_operations":[{"type":"creating","resource":{"urn":"urn:pulumi:s::paddock::kubernetes:core/v1:Namespace::agents-b","type":"kubernetes:core/v1:Namespace"}}]}}}`

// A run killed while the file backend rewrote a sidecar leaves it empty, and
// Pulumi then fails to read the whole blob ("failed to load checkpoint: EOF"):
// seen on a loaded machine when a SIGKILL landed mid-checkpoint. The repair
// removes exactly the sidecars that do not parse, and Pulumi reads the stack
// again.
func TestRepairSidecarsRemovesOnlyHalfWrittenOnes(t *testing.T) {
	root, file := fileStack(t, goodCheckpoint, goodCheckpoint)
	lockDir := filepath.Join(root, ".pulumi", "locks", "organization", projectName, "s")
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
	fs := &Store{root: root}
	got := fs.RepairSidecars()
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
	if again := fs.RepairSidecars(); len(again) != 0 {
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
	root, file := fileStack(t, `{"version":3,"checkpoint":{"stack":"organization/`+projectName+`/s","latest":{"manifest":{"time":"2026-12-05T00:00:00Z","magic":"","version":""}}}}`, "")
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
		cmd := exec.Command(cli, "stack", "export", "--stack", "organization/"+projectName+"/s", "--non-interactive")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PULUMI_BACKEND_URL=file://"+root, "PULUMI_HOME="+t.TempDir(),
			"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_CONFIG_PASSPHRASE=x")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := export(); err == nil || !strings.Contains(out, "EOF") {
		t.Fatalf("with an empty sidecar, pulumi stack export: %v\n%s\n(want it to fail on EOF, as the killed runs did)", err, out)
	}
	if removed := (&Store{root: root}).RepairSidecars(); len(removed) != 1 {
		t.Fatalf("repair removed %v, want the checkpoint's sidecar", removed)
	}
	if out, err := export(); err != nil {
		t.Fatalf("after the repair, pulumi stack export: %v\n%s", err, out)
	}
}
