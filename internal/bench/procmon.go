package bench

import (
	"github.com/paddock-platform/paddock/internal/procfs"

	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Run is one measured process run: its wall time and the peak resident
// memory of each program in its process tree.
type Run struct {
	Wall time.Duration `json:"wallNs"`
	// PeakRSS is the highest resident set of each program of the tree, by
	// executable name (paddock, pulumi, pulumi-resource-kubernetes, kubectl).
	PeakRSS map[string]int64 `json:"peakRssBytes"`
	// TreePeak is the highest sum over the whole tree at one sample.
	TreePeak int64 `json:"treePeakRssBytes"`
	// MaxRSS is the kernel's ru_maxrss of the direct child (and the
	// descendants it waited for), a cross-check of the sampled PeakRSS.
	MaxRSS int64 `json:"maxRssBytes"`
	// CPU is the CPU time (user + system) each program used during the run:
	// the tree's programs, and the cluster's (kube-apiserver, etcd, the
	// controllers), which serve every tool alike. It says where the time of
	// a slow run goes: our processes, the provider, or the API server.
	CPU map[string]float64 `json:"cpuSeconds"`
	// APIRequests are the API server's requests during the run, by verb,
	// where the caller counted them (Provision).
	APIRequests map[string]int64 `json:"apiRequests,omitempty"`
	// Output is stdout and stderr interleaved; Stdout the standard output
	// alone, where paddock prints its summary line.
	Output string `json:"-"`
	Stdout string `json:"-"`
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clusterPrograms are sampled system-wide during a run, not only in the tree, by
// the base name of their executable (kwok runs the fake nodes).
var clusterPrograms = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "agent-sandbox-controller"}

// clusterCPU is the CPU seconds used so far by the cluster's programs.
func clusterCPU() map[string]float64 {
	out := map[string]float64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		name := filepath.Base(exe)
		for _, c := range clusterPrograms {
			if name == c {
				out[name] += cpuOf(pid)
			}
		}
	}
	return out
}

// cpuOf is the user + system CPU seconds process pid has used.
func cpuOf(pid int) float64 {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.CPU().Seconds()
}

// sampleEvery is how often the process tree's memory is read.
const sampleEvery = 25 * time.Millisecond

// Measure runs cmd to completion, sampling the resident memory of it and
// every descendant from /proc (plugins the Pulumi CLI starts run in their own
// process group, but are still its children). A non-zero exit is an error
// that carries the output's tail.
func Measure(ctx context.Context, cmd *exec.Cmd) (*Run, error) {
	// exec copies stdout and stderr in two goroutines: the buffer they
	// share takes one write at a time, or a line is lost.
	var stdout bytes.Buffer
	out := &lockedBuffer{}
	if cmd.Stdout == nil {
		cmd.Stdout = io.MultiWriter(out, &stdout)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = out
	}
	before := clusterCPU()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &Run{PeakRSS: map[string]int64{}, CPU: map[string]float64{}}
	// The last CPU reading of each process of the tree, by pid: a process
	// that exits between samples loses at most one interval.
	cpuByPID := map[int]float64{}
	nameByPID := map[int]string{}
	var mu sync.Mutex
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			total := int64(0)
			for _, p := range tree(cmd.Process.Pid) {
				total += p.rss
				mu.Lock()
				if c := cpuOf(p.pid); c > 0 {
					cpuByPID[p.pid] = c
					nameByPID[p.pid] = p.name
				}
				if p.rss > r.PeakRSS[p.name] {
					r.PeakRSS[p.name] = p.rss
				}
				mu.Unlock()
			}
			mu.Lock()
			if total > r.TreePeak {
				r.TreePeak = total
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	r.Wall = time.Since(start)
	close(stop)
	<-sampled
	for pid, c := range cpuByPID {
		r.CPU[nameByPID[pid]] += c
	}
	// The kernel's figure for the direct child counts the descendants it
	// waited for as well: its own share is that total less theirs.
	total := cmd.ProcessState.UserTime().Seconds() + cmd.ProcessState.SystemTime().Seconds()
	self := filepath.Base(cmd.Path)
	others := 0.0
	for name, c := range r.CPU {
		if name != self {
			others += c
		}
	}
	if own := total - others; own > r.CPU[self] {
		r.CPU[self] = own
	}
	for name, c := range clusterCPU() {
		if d := c - before[name]; d > 0 {
			r.CPU[name] = d
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	r.Output, r.Stdout = out.String(), stdout.String()
	if err != nil {
		return r, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tailLines(r.Output, 25))
	}
	return r, nil
}

type proc struct {
	pid  int
	name string
	rss  int64
}

// tree lists root and its descendants with their resident memory.
func tree(root int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := ppidOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		queue = append(queue, children[pid]...)
		rss, name, ok := statusOf(pid)
		if ok {
			out = append(out, proc{pid: pid, name: name, rss: rss})
		}
	}
	return out
}

func ppidOf(pid int) (int, bool) {
	st, err := procfs.ReadStat(pid)
	return st.PPID, err == nil
}

// statusOf reads VmRSS and the executable's name of pid.
func statusOf(pid int) (int64, string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, "", false
	}
	var rss int64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				rss = kb * 1024
			}
		}
	}
	name := ""
	if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil {
		name = filepath.Base(exe)
	}
	if name == "" {
		return 0, "", false
	}
	return rss, name, true
}

// PeakSummary renders PeakRSS as "name 123 MiB, ..." sorted by size.
func (r *Run) PeakSummary() string {
	type kv struct {
		k string
		v int64
	}
	var list []kv
	for k, v := range r.PeakRSS {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %s", e.k, MiB(e.v)))
	}
	return strings.Join(parts, ", ")
}

// MiB formats bytes as mebibytes.
func MiB(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CPUSummary renders CPU as "name 1.2s, ..." sorted by time.
func (r *Run) CPUSummary() string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range r.CPU {
		if v >= 0.05 {
			list = append(list, kv{k, v})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %.1fs", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

// renameProgram files what program from measured under name to: the binary
// measured may be named otherwise (paddock-<commit>), and the report reads
// paddock's figures under "paddock".
func (r *Run) renameProgram(from, to string) {
	if from == to {
		return
	}
	if v, ok := r.PeakRSS[from]; ok {
		delete(r.PeakRSS, from)
		r.PeakRSS[to] = max(r.PeakRSS[to], v)
	}
	if v, ok := r.CPU[from]; ok {
		delete(r.CPU, from)
		r.CPU[to] += v
	}
}
