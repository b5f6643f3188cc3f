package localcluster

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A test host is a namespace of its own that this machine reaches at its
// address, and only while it stands: made, served from with
// ListenInNetns, stopped, gone. Needs root and ip(8); the traffic stays on
// this machine, between its namespace and the one the test made.
func TestStartTestHostLinksANamespaceOfItsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace and a veth pair needs root")
	}
	for _, tool := range []string{"ip", "unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on this machine", tool)
		}
	}
	const index = 250 // far above the e2e suite's test hosts
	h, err := StartTestHost("unit.paddock.test", index)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	self, _ := os.Readlink("/proc/self/ns/net")
	if ns, _ := os.Readlink("/proc/" + strconv.Itoa(h.PID()) + "/ns/net"); ns == self || ns == "" {
		t.Fatalf("the holder runs in this process's network namespace (%q)", ns)
	}
	l, err := ListenInNetns(h.PID(), net.JoinHostPort(h.Addr(), "9443"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go serveGreeting(l, "hello from "+h.Name+"\n")
	c, err := net.DialTimeout("tcp", net.JoinHostPort(h.Addr(), "9443"), 5*time.Second)
	if err != nil {
		t.Fatalf("this machine does not reach the test host: %v", err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if strings.TrimSpace(line) != "hello from unit.paddock.test" {
		t.Errorf("greeting %q", line)
	}
	// The listener is the namespace's: this machine's own loopback has none.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9443", time.Second); err == nil {
		c.Close()
		t.Errorf("the listener is on this machine's loopback too")
	}

	h.Stop()
	if out, err := exec.Command("ip", "link", "show", h.Link()).CombinedOutput(); err == nil {
		t.Errorf("link %s outlives the test host: %s", h.Link(), out)
	}
	if _, err := StartTestHost("low.paddock.test", 3); err == nil || !strings.Contains(err.Error(), "index 3") {
		t.Errorf("index of a world host: %v", err)
	}
}
