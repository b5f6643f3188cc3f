package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A real node of the same name started from another PADDOCK_HOME is found
// by its cgroup, and named by the home its processes carry; Up's refusal
// says how to stop it.
func TestSameNameNodeElsewhere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a cgroup (CI runs as root)")
	}
	mounts := cgroupMounts()
	if len(mounts) == 0 {
		t.Fatal("no cgroup hierarchy mounted")
	}
	// Not "paddock-": a `local up` beside this test (make test runs the
	// live suite alongside) must not take this cgroup for a real node.
	old := nodeCgroupPrefix
	nodeCgroupPrefix = "pdktest-"
	t.Cleanup(func() { nodeCgroupPrefix = old })
	name := fmt.Sprintf("elsewhere-%d", os.Getpid())
	dir := filepath.Join(mounts[0], nodeCgroupPrefix+name, "node")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("making cgroup %s: %v", dir, err)
	}
	// Whatever a failed case left in the cgroup is killed: a process left
	// there would pass for a real node and refuse every later `local up`.
	t.Cleanup(func() {
		for i := 0; i < 100; i++ {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			pids := strings.Fields(string(b))
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		os.Remove(dir)
		os.Remove(filepath.Dir(dir))
	})

	if running, _ := sameNameNodeElsewhere(name); running {
		t.Fatal("an empty cgroup counted as a running node")
	}
	for _, tc := range []struct{ name, env, arg, want string }{
		{"home in the environment", "PADDOCK_HOME=/srv/other-home", "--v=2", "/srv/other-home"},
		{"home only in the arguments", "", "--config=/srv/ci-home/local/node/kubelet.yaml", "/srv/ci-home"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// sh -c ignores the argument after the script, which is only
			// there to be read from /proc/PID/cmdline; the trailing `:` keeps
			// sh from exec'ing sleep, which would replace that command line.
			cmd := exec.Command("sh", "-c", "sleep 1000; :", "node", tc.arg)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			// sh forks sleep: the group is killed whole, or the sleep would
			// stay in the cgroup and answer for the next case.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
				t.Fatalf("moving the process into the cgroup: %v", err)
			}
			// The shell is in the cgroup at once; what it says of itself
			// is read until it is there (a hang guard, not a timing).
			var running bool
			var home string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if running, home = sameNameNodeElsewhere(name); running && home == tc.want {
					break
				}
			}
			if !running || home != tc.want {
				b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
				var seen []string
				for _, pid := range strings.Fields(string(b)) {
					c, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
					seen = append(seen, pid+": "+strings.ReplaceAll(string(c), "\x00", " "))
				}
				t.Fatalf("running %v, home %q; want true, %q (in the cgroup: %q)", running, home, tc.want, seen)
			}
			err := errNodeElsewhere(name, home)
			for _, want := range []string{"already runs on this machine", "PADDOCK_HOME=" + tc.want + " paddock local down --name " + name, "--name"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal lacks %q: %v", want, err)
				}
			}
		})
		// The cgroup must be empty again before the next case or cleanup.
		deadline := time.Now().Add(10 * time.Second) // a hang guard
		for {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if strings.TrimSpace(string(b)) == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes %s still in the test's cgroup", strings.Fields(string(b)))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Only a cluster that may run a real node refuses to start beside another
// home's real node of the same name: kwok nodes share nothing with it.
func TestOnlyARealNodeChecksForOneElsewhere(t *testing.T) {
	for nodes, want := range map[string]bool{NodesFake: false, NodesReal: true, NodesAuto: true} {
		c := New(Options{Nodes: nodes}).(*cluster)
		if got := c.checksNodeElsewhere(); got != want {
			t.Errorf("nodes %q: checks %v, want %v", nodes, got, want)
		}
	}
}
