package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMatchRecord(t *testing.T) {
	rec := procRecord{PID: 10, StartTime: 500, Exe: "/opt/bin/agent-sandbox-controller"}
	live := procInfo{PID: 10, State: 'S', StartTime: 500, Exe: "/opt/bin/agent-sandbox-controller"}
	cases := []struct {
		name string
		rec  procRecord
		info procInfo
		want bool
		why  string
	}{
		{"same process", rec, live, true, ""},
		{"no pid recorded", procRecord{}, live, false, "no pid"},
		{"other pid", rec, procInfo{PID: 11, State: 'S', StartTime: 500, Exe: rec.Exe}, false, "not running"},
		{"zombie", rec, procInfo{PID: 10, State: 'Z', StartTime: 500}, false, "zombie"},
		{"pid reused", rec, procInfo{PID: 10, State: 'S', StartTime: 900, Exe: rec.Exe}, false, "another process"},
		{"other binary", rec, procInfo{PID: 10, State: 'S', StartTime: 500, Exe: "/usr/bin/vim"}, false, "runs /usr/bin/vim"},
		{"exe unreadable", rec, procInfo{PID: 10, State: 'S', StartTime: 500}, false, "unknown binary"},
		{"no exe recorded", procRecord{PID: 10, StartTime: 500}, live, true, ""},
	}
	for _, c := range cases {
		got, why := matchRecord(c.rec, c.info)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: got (%v, %q), want (%v, …%q…)", c.name, got, why, c.want, c.why)
		}
	}
}

func TestMatchBinary(t *testing.T) {
	marker := "/home/u/.paddock/local/controlplane"
	info := procInfo{PID: 7, State: 'S', Exe: "/home/u/.paddock/tools/kubernetes-v1.35.4-abc/bin/kube-apiserver",
		Cmdline: []string{"/x/bin/kube-apiserver", "--client-ca-file", marker + "/pki/ca.crt"}}
	if ok, why := matchBinary(info, "/home/u/.paddock/tools/kubernetes-v1.35.4-def/bin/kube-apiserver", marker); !ok {
		t.Errorf("same binary name, marker present (tools rebuilt meanwhile): got %q", why)
	}
	if ok, _ := matchBinary(info, "/x/bin/etcd", marker); ok {
		t.Error("other binary accepted")
	}
	if ok, _ := matchBinary(info, "/x/kube-apiserver", "/home/u/.paddock/other/controlplane"); ok {
		t.Error("another cluster's process accepted")
	}
	z := info
	z.State = 'Z'
	if ok, _ := matchBinary(z, "/x/kube-apiserver", marker); ok {
		t.Error("zombie accepted")
	}
}

func TestCleanExe(t *testing.T) {
	if got := cleanExe("/p/bin/paddock (deleted)"); got != "/p/bin/paddock" {
		t.Errorf("got %q", got)
	}
	if got := cleanExe("/p/bin/paddock"); got != "/p/bin/paddock" {
		t.Errorf("got %q", got)
	}
}

// TestProcessIdentityLive checks the /proc reading against real processes: this
// test process, a child while it runs, and the same pid after it exited.
func TestProcessIdentityLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no procfs")
	}
	self, err := recordProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if exe, _ := os.Executable(); self.Exe != resolveExe(exe) {
		t.Errorf("self exe %q, want %q", self.Exe, resolveExe(exe))
	}
	if ok, why := self.alive(); !ok {
		t.Fatalf("self not alive: %s", why)
	}
	forged := self
	forged.StartTime++
	if ok, _ := forged.alive(); ok {
		t.Error("a record with another start time matched this process")
	}

	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child, err := recordProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if child.Exe != resolveExe(sleep) {
		t.Errorf("child exe %q, want %q", child.Exe, resolveExe(sleep))
	}
	// The identity check refuses to signal a process that does not match.
	wrong := child
	wrong.Exe = "/not/the/binary"
	if sent, err := terminate(wrong, time.Second); sent || err != nil {
		t.Fatalf("terminate of a mismatched record: sent=%v err=%v", sent, err)
	}
	if ok, _ := child.alive(); !ok {
		t.Fatal("child was signalled through a mismatched record")
	}
	// A reaping goroutine, as Up uses for the supervisor.
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if sent, err := terminate(child, 5*time.Second); !sent || err != nil {
		t.Fatalf("terminate: sent=%v err=%v", sent, err)
	}
	<-done
	if ok, why := child.alive(); ok || !strings.Contains(why, "not running") {
		t.Errorf("after terminate: alive=%v why=%q", ok, why)
	}
	if sent, err := terminate(child, time.Second); sent || err != nil {
		t.Errorf("terminate of a gone process: sent=%v err=%v", sent, err)
	}
}

func TestZombieIsNotAlive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no procfs")
	}
	catPath, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat binary")
	}
	// cat blocks on its stdin, so it is recorded while it surely runs; closing
	// the pipe then lets it exit, and nothing reaps it until Wait.
	cmd := exec.Command(catPath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec, err := recordProcess(cmd.Process.Pid)
	if err != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("record a running process: %v", err)
	}
	if ok, why := rec.alive(); !ok {
		t.Fatalf("a running process reported not alive: %s", why)
	}
	_ = stdin.Close()
	// Not reaped yet: a zombie.
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := inspect(rec.PID)
		if err == nil && info.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never became a zombie (%v, %c)", err, info.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ok, why := rec.alive(); ok || !strings.Contains(why, "zombie") {
		t.Errorf("zombie reported alive=%v why=%q", ok, why)
	}
	_ = cmd.Wait()
}

func TestInspectComponentNeverTrustsStalePID(t *testing.T) {
	dir := t.TempDir()
	c := New(Options{Name: "unit", Dir: dir}).(*cluster)
	c.state = &clusterState{Name: "unit", Binaries: map[string]string{"kube-apiserver": "/nonexistent/kube-apiserver"}}
	pids := filepath.Dir(c.componentPIDFile("kube-apiserver"))
	if err := os.MkdirAll(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	// The pid file names this test process: alive, but not a kube-apiserver of
	// this cluster. Status must call it crashed and Down must not signal it.
	if err := os.WriteFile(filepath.Join(pids, "kube-apiserver.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	ci := c.inspectComponent(cpComponent{Name: "kube-apiserver", Tool: "kube-apiserver"})
	if !ci.PIDFile || ci.Owned {
		t.Fatalf("got %+v, want a pid file that is not owned", ci)
	}
	if err := c.stopComponents(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pids, "kube-apiserver.pid")); !os.IsNotExist(err) {
		t.Error("stale pid file left for a later stop to act on")
	}
	// And this process is, evidently, still alive.
}
