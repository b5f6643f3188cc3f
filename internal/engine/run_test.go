package engine

import "testing"

// An API server that is down shows up in the provider's errors in more than
// one way: refused or timed-out dials, and (when it dies mid-request) a reset
// read, a broken write, or a request that got no answer at all (EOF). An API server that answers with an error is not
// "gone".
func TestAPIServerGone(t *testing.T) {
	for line, want := range map[string]bool{
		`Get "https://127.0.0.1:32764/api": dial tcp 127.0.0.1:32764: connect: connection refused`: true,
		`dial tcp 10.0.0.1:443: i/o timeout`:               true,
		`dial tcp 10.0.0.1:443: connect: no route to host`: true,
		`Patch "https://127.0.0.1:32764/api/v1/namespaces/a": read tcp 127.0.0.1:54146->127.0.0.1:32764: read: connection reset by peer`:    true,
		`write tcp 127.0.0.1:54146->127.0.0.1:32764: write: broken pipe`:                                                                    true,
		`Patch "https://127.0.0.1:32764/api/v1/namespaces/agents-t0001?fieldManager=pulumi-kubernetes-56da8cee&force=true": unexpected EOF`: true,
		`Get "https://127.0.0.1:32764/api/v1/namespaces": EOF`:                                                                              true,
		`reading the config: unexpected EOF`:                                                                                                false,
		`namespaces "a" is forbidden: User "x" cannot patch resource "namespaces"`:                                                          false,
		`admission webhook "x" denied the request: connection reset by peer in the message text`:                                            false,
		`the server could not find the requested resource`:                                                                                  false,
	} {
		if got := apiServerGone(line); got != want {
			t.Errorf("apiServerGone(%q) = %v, want %v", line, got, want)
		}
	}
}
