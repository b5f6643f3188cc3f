package loopbackport

import (
	"fmt"
	"net"
	"strconv"
	"testing"
)

func TestFreeIsBelowReservedBelowEphemeral(t *testing.T) {
	low := EphemeralLow()
	got, err := Free(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range got {
		if p >= low-reservedBand || p < lowest {
			t.Errorf("port %d is outside %d..%d", p, lowest, low-reservedBand-1)
		}
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d given as free: %v", p, err)
			continue
		}
		l.Close()
	}
	res, err := Reserved("/home/a/local", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res {
		if p >= low || p < low-reservedBand {
			t.Errorf("reserved port %d is outside %d..%d", p, low-reservedBand, low-1)
		}
	}
}

// Two clusters of different homes made at the same moment start their scans
// at different places, so neither takes the other's ports; one home asks
// again and gets its own ports back.
func TestReservedDependsOnTheKey(t *testing.T) {
	a, err := Reserved("/home/a/local", 6)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Reserved("/home/a/local", 6)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(again) {
		t.Errorf("one key, two answers: %v then %v", a, again)
	}
	b, err := Reserved("/tmp/paddock-e2e-123/local", 6)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[int]bool{}
	for _, p := range a {
		mine[p] = true
	}
	for _, p := range b {
		if mine[p] {
			t.Errorf("two homes share port %d: %v and %v", p, a, b)
		}
	}
}

func TestScanSkipsBoundPortsAndWraps(t *testing.T) {
	// A band of three, the middle port bound: from the middle, the scan
	// gives the last port, then wraps to the first.
	var l net.Listener
	var lo int
	for range 20 {
		got, err := Free(3)
		if err != nil {
			t.Fatal(err)
		}
		lo = got[0]
		if l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(lo+1)); err == nil && IsFree(lo) && IsFree(lo+2) {
			break
		}
		if l != nil {
			l.Close()
			l = nil
		}
	}
	if l == nil {
		t.Skip("found no three free adjacent ports to test with")
	}
	defer l.Close()
	if IsFree(lo + 1) {
		t.Errorf("IsFree(%d) while it is bound", lo+1)
	}
	got, err := scan(2, lo, lo+3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != lo+2 || got[1] != lo {
		t.Errorf("scan from the bound middle of %d..%d gave %v, want [%d %d]", lo, lo+2, got, lo+2, lo)
	}
	if _, err := scan(3, lo, lo+3, 0); err == nil {
		t.Errorf("scan found three free ports in %d..%d with %d bound", lo, lo+2, lo+1)
	}
}
