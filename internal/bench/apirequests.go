package bench

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// requestsMetric is the API server's counter of the requests it served, by
// verb, resource and code: a run's requests are its delta.
const requestsMetric = "apiserver_request_total"

// requestTotals sums the API server's metrics text by verb (GET, LIST,
// WATCH, POST, PATCH, APPLY, DELETE, ...); lines of other metrics, comments
// and lines it cannot read are skipped.
func requestTotals(text string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, requestsMetric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		// A sample may carry a timestamp after its value.
		if f := strings.Fields(value); len(f) > 0 {
			value = f[0]
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[labelOf(labels, "verb")] += v
	}
	return out
}

// labelOf is the value of label name in a metric's label list
// (name="value",...); label values here never hold a quote or a comma.
func labelOf(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// requestsDelta is after less before, per verb, without verbs that did not
// move; nil when nothing moved or a reading is missing.
func requestsDelta(before, after map[string]float64) map[string]int64 {
	if before == nil || after == nil {
		return nil
	}
	var out map[string]int64
	for verb, a := range after {
		if d := int64(a - before[verb] + 0.5); d > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[verb] = d
		}
	}
	return out
}

// RequestCounter reads the API server's request counter before and after a
// run (nil: no counting).
type RequestCounter struct{ client rest.Interface }

// NewRequestCounter counts through client, a REST client of the cluster
// whose credentials may read /metrics (the local cluster's admin).
func NewRequestCounter(client rest.Interface) *RequestCounter {
	return &RequestCounter{client: client}
}

// Read is the counter now, by verb; nil when the API server did not answer
// (the run is then reported without its requests, not failed).
func (c *RequestCounter) Read(ctx context.Context) map[string]float64 {
	if c == nil || c.client == nil {
		return nil
	}
	b, err := c.client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	return requestTotals(string(b))
}

// TotalRequests is the sum over verbs.
func TotalRequests(byVerb map[string]int64) int64 {
	var n int64
	for _, v := range byVerb {
		n += v
	}
	return n
}

// checkpointBytes is the size of the stacks' checkpoints in a file
// backend's directory (the Pulumi state each paddock run reads and writes):
// every stack file under .pulumi/stacks, compressed or not, without the
// backups and attribute files beside them. 0 when there is none.
func checkpointBytes(stateDir string) int64 {
	if stateDir == "" {
		return 0
	}
	var n int64
	files, _ := filepath.Glob(filepath.Join(stateDir, ".pulumi", "stacks", "*", "*"))
	for _, f := range files {
		if !strings.HasSuffix(f, ".json") && !strings.HasSuffix(f, ".json.gz") {
			continue
		}
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			n += st.Size()
		}
	}
	return n
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages
// (/proc/loadavg); nil where there is none.
func LoadAverage() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
