package bench

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
)

// machineCPUsRe reads the CPU count the results' machine line names.
var machineCPUsRe = regexp.MustCompile(`(\d+) CPUs`)

// machineCPUs is the CPU count of the machine line, 0 when it names none.
func machineCPUs(machine string) int {
	m := machineCPUsRe.FindStringSubmatch(machine)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// cpuSplit sums a sample's CPU seconds: the tool's own process tree
// (paddock, the Pulumi CLI and provider, kubectl) and the cluster's
// programs (API server, etcd, controllers, kwok) that served it.
func cpuSplit(s Sample) (tool, cluster float64) {
	for name, c := range s.CPU {
		isCluster := false
		for _, p := range clusterPrograms {
			isCluster = isCluster || name == p
		}
		if isCluster {
			cluster += c
		} else {
			tool += c
		}
	}
	return tool, cluster
}

// writeCost compares, at each size, paddock's create and destroy with
// their floors by what each spent: wall time, the CPU of the tool's own
// processes and of the cluster serving it, how busy that kept the machine's
// CPUs, and the API requests. Where paddock is over its target, the
// difference is whose.
func (r *Results) writeCost(w io.Writer, ns []int) {
	tool := r.mainTool()
	cpus := machineCPUs(r.Machine)
	var rows []string
	for _, n := range ns {
		for _, op := range []string{OpCreate, OpDestroy} {
			s, ok := r.Find(tool, op, n)
			floor, okFloor := r.Find(ToolFloor, op, n)
			if !ok || !okFloor || s.CPU == nil || floor.CPU == nil || floor.Seconds <= 0 {
				continue
			}
			busy := func(x Sample) string {
				t, c := cpuSplit(x)
				if cpus == 0 || x.Seconds <= 0 {
					return "–"
				}
				return fmt.Sprintf("%.0f%%", 100*(t+c)/(x.Seconds*float64(cpus)))
			}
			pt, pc := cpuSplit(s)
			ft, fc := cpuSplit(floor)
			rows = append(rows, fmt.Sprintf("| %d | %s | %.1f / %.1f (%.1fx) | %.1f (pulumi %.1f, provider %.1f, paddock %.1f) | %.1f / %.1f | %s / %s | %s / %s |",
				n, op, s.Seconds, floor.Seconds, s.Seconds/floor.Seconds,
				pt, s.CPU["pulumi"], s.CPU["pulumi-resource-kubernetes"], s.CPU["paddock"], pc, fc+ft,
				busy(s), busy(floor), count(int(TotalRequests(s.APIRequests))), count(int(TotalRequests(floor.APIRequests)))))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### What paddock's create and destroy spend beyond their floors\n\n")
	fmt.Fprintf(w, "Each pair is paddock / the floor at that size. *paddock's processes* is the CPU of paddock's tree (its Pulumi CLI and provider included); *cluster* the CPU of the API server, etcd and the controllers while each ran (the floor runs in the benchmark's own process, whose CPU is not told apart: its column holds only the cluster). ")
	fmt.Fprintf(w, "*CPUs busy* is all that CPU over the wall time and the machine's %d CPUs (the rest went to whatever else ran, see the load averages): near 100%% a run was bound by CPU, and the CPU paddock spends beyond the floor is what its ratio pays for.\n\n", cpus)
	fmt.Fprintf(w, "| tenants | op | wall s (ratio) | paddock's processes, CPU s | cluster CPU s | CPUs busy | API requests |\n|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
}
