//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/pgtest"
)

// runnerHome is a PADDOCK_HOME of its own for one "runner": the suite's
// tools and local cluster (bin, pulumi, local) are shared as a CI runner
// shares the cluster it deploys to; state, run journal, locks and stored
// forms are its own, so all the runners share is the backend.
func runnerHome(t *testing.T, e *env) string {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{"bin", "pulumi", "local"} {
		if err := os.Symlink(filepath.Join(e.home, d), filepath.Join(home, d)); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestSharedBackendTwoRunners: two runners (separate PADDOCK_HOMEs) share one
// PostgreSQL backend, started on loopback. Runner A's up is killed while
// the API server holds one of its creates; runner B, which shares nothing
// with A but the database, removes A's lock, converges to its own spec and
// prunes what A created that no state holds; drift from either runner is
// then clean, and the database holds no run record and no lock.
//
// Both runners are on this machine, so B learns A died from the recorded
// pid; a runner on another host waits out the lease (60 s without renewal),
// which the engine's own tests show against the same PostgreSQL.
func TestSharedBackendTwoRunners(t *testing.T) {
	e := live
	pg := pgtest.Start(t)
	backend := pg.NewDatabase(t)
	homeA, homeB := runnerHome(t, e), runnerHome(t, e)
	// The backend goes by the environment, as a CI secret would: its
	// password never shows in a logged command line.
	runner := func(home string) []string {
		return []string{"PADDOCK_HOME=" + home, "PULUMI_CONFIG_PASSPHRASE=" + teamPassphrase, "PULUMI_BACKEND_URL=" + backend}
	}
	small, large := faultSpecs(t, 1, 3)
	namespaces := faultNamespaces(3)
	defer e.destroyAndWait(t, runner(homeB), namespaces, small)

	if r := e.runPaddock(t, runner(homeA), "up", small); r.code != 0 {
		t.Fatalf("runner A: up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}

	// Runner A grows the platform and is killed while the API server holds
	// the create of the second new tenant's namespace.
	hold := holdNamespaceCreate(t, e, namespaces[2])
	run := e.startPaddock(t, runner(homeA), "up", large)
	defer run.stop()
	select {
	case <-hold.held:
	case err := <-run.done:
		t.Fatalf("runner A's up ended (%v) before creating namespace %s:\n%s", err, namespaces[2], tail(run.out.String(), 20))
	case <-time.After(5 * time.Minute):
		t.Fatalf("runner A's up did not create namespace %s within 5m:\n%s", namespaces[2], tail(run.out.String(), 20))
	}
	if err := syscall.Kill(-run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-run.exited
	hold.Release()
	// A created at least one namespace of its new tenants (the second may
	// still complete on the API server once released): B has it to prune.
	eventually(t, "a namespace of runner A's new tenants", 30*time.Second, func() error {
		for _, ns := range namespaces[1:] {
			if _, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{}); err == nil {
				return nil
			}
		}
		return fmt.Errorf("none of %v exists", namespaces[1:])
	})

	// What A left is in the database, and only there.
	db, err := pgx.Connect(ctxT(t, 10*time.Second), backend)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(ctxT(t, 10*time.Second), query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	const runs, locks = "SELECT count(*) FROM paddock_runs", "SELECT count(*) FROM pulumi_state WHERE key LIKE '%/.pulumi/locks/%'"
	if n, l := count(runs), count(locks); n != 1 || l != 1 {
		t.Fatalf("after runner A was killed the database holds %d run record(s) and %d lock(s), want 1 and 1", n, l)
	}
	for _, home := range []string{homeA, homeB} {
		for _, d := range []string{"state", "runs"} {
			if _, err := os.Stat(filepath.Join(home, d)); err == nil {
				t.Errorf("%s/%s exists: the runner kept state on its own disk", home, d)
			}
		}
	}

	// Runner B, sharing only the database, recovers and goes back to one tenant.
	r := e.runPaddock(t, runner(homeB), "up", small, "--lock-wait", "2m")
	if r.code != 0 {
		t.Fatalf("runner B: up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	t.Logf("runner B's up (%s):\n%s", r.took.Round(100*time.Millisecond), tail(r.stdout, 12))
	for _, want := range []string{"removed the lock of a dead update", "a dead run created that no state holds", "pruned"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("runner B's up does not say %q:\n%s", want, r.stdout)
		}
	}
	for _, ns := range namespaces[1:] {
		eventually(t, "namespace "+ns+" (created by A, pruned by B) gone", 3*time.Minute, func() error {
			_, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s still exists (%v)", ns, err)
		})
	}
	if n, l := count(runs), count(locks); n != 0 || l != 0 {
		t.Errorf("after runner B's up the database holds %d run record(s) and %d lock(s), want none", n, l)
	}
	for _, home := range []string{homeB, homeA} {
		if rep, _ := e.driftReport(t, 0, runner(home), small); rep.Drifted() {
			t.Errorf("drift from %s: %+v %+v", home, rep.Resources, rep.Unmanaged)
		}
	}
}
