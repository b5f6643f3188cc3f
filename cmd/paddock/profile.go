package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// cpuProfileEnv names a file paddock writes a CPU profile of its own
// process to (go tool pprof reads it); the Pulumi CLI and provider it
// starts are not in it. memProfileEnv names one for the heap in use when
// the command ends.
const (
	cpuProfileEnv = "PADDOCK_CPU_PROFILE"
	memProfileEnv = "PADDOCK_MEM_PROFILE"
)

// startProfiles starts what the environment asks for; the returned stop
// writes the profiles out and is safe to call once.
func startProfiles() (stop func()) {
	var cpu *os.File
	if name := os.Getenv(cpuProfileEnv); name != "" {
		f, err := os.Create(name)
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			} else {
				cpu = f
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "paddock: %s: %v\n", cpuProfileEnv, err)
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if name := os.Getenv(memProfileEnv); name != "" {
			runtime.GC()
			f, err := os.Create(name)
			if err == nil {
				err = pprof.WriteHeapProfile(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "paddock: %s: %v\n", memProfileEnv, err)
			}
		}
	}
}
