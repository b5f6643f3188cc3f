package engine

import (
	"os"
	"strconv"
	"testing"

	"github.com/paddock-platform/paddock/internal/converge"
)

// The kubernetes provider gets the engine's client rate limit, unless the
// user chose one: the user's value is left for the provider to read.
func TestProviderClientEnv(t *testing.T) {
	for _, k := range []string{"PULUMI_K8S_CLIENT_QPS", "PULUMI_K8S_CLIENT_BURST"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v) // restored after the test
			os.Unsetenv(k)
		}
	}
	env := providerClientEnv()
	if got, want := env["PULUMI_K8S_CLIENT_QPS"], strconv.Itoa(converge.ClusterQPS); got != want {
		t.Errorf("QPS = %q, want %q", got, want)
	}
	if got, want := env["PULUMI_K8S_CLIENT_BURST"], strconv.Itoa(2*converge.ClusterQPS); got != want {
		t.Errorf("burst = %q, want %q", got, want)
	}

	t.Setenv("PULUMI_K8S_CLIENT_QPS", "20")
	t.Setenv("PULUMI_K8S_CLIENT_BURST", "40")
	if env := providerClientEnv(); len(env) != 0 {
		t.Errorf("the user's limits are overridden: %v", env)
	}
}
