package state

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestHostIDNamesTheBootAndThePIDNamespace(t *testing.T) {
	id := HostID()
	if id == "" {
		t.Fatal("HostID is empty on Linux with /proc")
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if !strings.Contains(id, strings.TrimSpace(string(boot))) || !strings.Contains(id, ns) {
		t.Fatalf("HostID %q lacks the boot id or the PID namespace %q", id, ns)
	}
}

// A record of this hostname but another PID namespace (a second CI
// container) is judged by its lease, never by asking its pid here.
func TestRunAliveJudgesOtherNamespacesByLease(t *testing.T) {
	gone := 1<<22 + 777
	host := Hostname()
	here := Run{Op: "up", PID: gone, Host: host, HostID: HostID(), Started: time.Now()}
	if here.Alive(time.Second) {
		t.Error("a record of this very host whose pid is gone is alive")
	}
	for _, other := range []Run{
		{Op: "up", PID: gone, Host: host, HostID: "boot another, pid:[4026531836]", Started: time.Now()},
		{Op: "up", PID: gone, Host: host, Started: time.Now()}, // written before HostID was kept
	} {
		if !other.Alive(time.Second) {
			t.Errorf("%+v: a fresh lease of another namespace is dead", other)
		}
		if other.Alive(LeaseExpiry + time.Second) {
			t.Errorf("%+v: an expired lease of another namespace is alive", other)
		}
	}
	// Our own pid under another namespace's id is not asked either.
	mine := Run{Op: "up", PID: os.Getpid(), Host: host, HostID: "boot another, pid:[1]", Started: time.Now()}
	if mine.Alive(LeaseExpiry + time.Second) {
		t.Error("a live pid here kept another namespace's expired record alive")
	}
}
