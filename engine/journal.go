package engine

import "time"

// DeadRun is an up or destroy of a stack whose process ended without
// finishing: it may have created or deleted objects the state does not
// record (the state is saved at the end of a run).
type DeadRun struct {
	Op      string // "up" or "destroy"
	PID     int
	Host    string
	Started time.Time
}

// deadRuns lists the runs of stack name that died without finishing. The run
// journal that records them is not written yet: nothing has died.
func (e *Engine) deadRuns(name string) ([]DeadRun, error) {
	_ = name
	return nil, nil
}
