// Package loopbackport chooses TCP ports on 127.0.0.1 for the servers
// Paddock starts (the local control plane, the Agent Sandbox controller,
// the test servers). Every port it gives is below the kernel's ephemeral
// range: a port from that range can be taken by any outgoing connection
// between being found free and being bound, and on a busy machine (the
// e2e suite beside the unit tests) one is. A server that then half-starts,
// with one listener missing, fails far from the cause.
//
// Two bands, both below the ephemeral range: the top one (Reserved) for
// the local control plane, whose ports are kept for the cluster's life;
// the one beneath it (Free) for everything chosen afresh at each start.
package loopbackport

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// reservedBand is how many ports under the ephemeral range are the
// control plane's; freeBand how many under those the rest choose from.
const (
	reservedBand = 4096
	freeBand     = 12288
	lowest       = 1025 // never a privileged port
)

// EphemeralLow is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 when it cannot be read.
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= lowest {
		return 32768
	}
	return lo
}

// IsFree says whether port can be bound on 127.0.0.1 now.
func IsFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Reserved returns n free ports of the reserved band for the cluster named
// by key (its directory): the same ports on every call while they stay free,
// so a cluster made again keeps its addresses. The scan starts at a place in
// the band that key decides, going down and wrapping round, so clusters of
// different homes made at the same moment (the e2e suite's two lanes, a
// benchmark beside them) seldom choose alike: ports only become taken when
// bound, and each would otherwise find the same free ones at the top.
func Reserved(key string, n int) ([]int, error) {
	top := EphemeralLow() - 1
	lo := max(lowest, top-reservedBand+1)
	size := top - lo + 1
	if size < n {
		return nil, fmt.Errorf("the kernel's ephemeral range starts at %d, leaving no room below it for %d loopback ports", top+1, n)
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	start := int(h.Sum32() % uint32(size))
	var got []int
	for i := 0; i < size && len(got) < n; i++ {
		if p := top - (start+i)%size; IsFree(p) {
			got = append(got, p)
		}
	}
	if len(got) < n {
		return nil, fmt.Errorf("found %d free loopback ports of %d in %d..%d", len(got), n, lo, top)
	}
	return got, nil
}

// Free returns n distinct free ports from the band beneath the reserved
// one, starting at a random place in it, so two processes choosing at the
// same moment seldom choose alike (a caller that loses the race to bind
// chooses again).
func Free(n int) ([]int, error) {
	hi := EphemeralLow() - reservedBand // exclusive
	lo := max(lowest, hi-freeBand)
	if hi-lo < n {
		return nil, fmt.Errorf("the kernel's ephemeral range starts at %d, leaving no room below it for %d loopback ports", EphemeralLow(), n)
	}
	return scan(n, lo, hi, rand.IntN(hi-lo))
}

// scan returns the first n free ports of lo..hi-1 from lo+start on,
// wrapping round.
func scan(n, lo, hi, start int) ([]int, error) {
	size := hi - lo
	var got []int
	for i := 0; i < size && len(got) < n; i++ {
		if p := lo + (start+i)%size; IsFree(p) {
			got = append(got, p)
		}
	}
	if len(got) < n {
		return nil, fmt.Errorf("found %d free loopback ports of %d in %d..%d", len(got), n, lo, hi-1)
	}
	return got, nil
}
