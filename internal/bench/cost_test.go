package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestCostComparesCreateWithItsFloor(t *testing.T) {
	if n := machineCPUs("linux/amd64, 2 CPUs, 24 GiB, go1.26.8"); n != 2 {
		t.Errorf("machineCPUs = %d, want 2", n)
	}
	r := format4()
	r.Machine = "linux/amd64, 2 CPUs, 24 GiB"
	for i, s := range r.Provision {
		switch {
		case s.Tool == ToolPaddock && s.Op == OpCreate && s.Tenants == 100:
			r.Provision[i].CPU = map[string]float64{"paddock": 9, "pulumi": 18, "pulumi-resource-kubernetes": 9, "kube-apiserver": 44, "etcd": 9}
			r.Provision[i].APIRequests = map[string]int64{"APPLY": 2000, "GET": 4000}
		case s.Tool == ToolFloor && s.Op == OpCreate && s.Tenants == 100:
			r.Provision[i].CPU = map[string]float64{"kube-apiserver": 27, "etcd": 5}
			r.Provision[i].APIRequests = map[string]int64{"APPLY": 2016}
		}
	}
	r.Analyse()
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	// 89 CPU s over 68.5 s on 2 CPUs is 65%; 32 over 45 s is 36%.
	want := "| 100 | create | 68.5 / 45.0 (1.5x) | 36.0 (pulumi 18.0, provider 9.0, paddock 9.0) | 53.0 / 32.0 | 65% / 36% | 6000 / 2016 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("no row %q in:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "| 1 | create |") {
		t.Error("a size without CPU figures got a row")
	}
}
