// Package spectest loads spec directories for tests of the stages after
// the spec language (policy, drift, ...), failing the test with the
// loader's diagnostics. Only tests import it.
package spectest

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
)

// Load loads the spec directory dir with an empty environment, failing t
// on any error.
func Load(t testing.TB, dir string) *model.Platform {
	t.Helper()
	l := schemas.NewLoader()
	p, diags := l.LoadDir(dir, schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		var b strings.Builder
		l.WriteDiagnostics(&b, diags)
		t.Fatalf("%s does not load:\n%s", dir, b.String())
	}
	return p
}
