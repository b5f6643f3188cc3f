package kata

import (
	"bufio"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/pins"
)

// kataDeployEnv reads testdata/kata-deploy-env.txt: the kata-deploy version it
// was read from and the environment variable names that version reads.
func kataDeployEnv(t *testing.T) (version string, names map[string]bool) {
	t.Helper()
	f, err := os.Open("testdata/kata-deploy-env.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names = map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "version "):
			version = strings.TrimPrefix(line, "version ")
		default:
			names[line] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if version == "" || len(names) == 0 {
		t.Fatalf("fixture has version %q and %d names", version, len(names))
	}
	return version, names
}

func daemonSet(t *testing.T, a gcpinputs.KataArgs) *appsv1.DaemonSet {
	t.Helper()
	for _, o := range Objects(a) {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			return ds
		}
	}
	t.Fatal("no kata-deploy DaemonSet")
	return nil
}

// Every variable the DaemonSet sets is one the pinned kata-deploy reads: a
// name it does not know is silently ignored (3.20.0 ignores SHIMS_X86_64 and
// installs every shim it ships). The fixture must be re-read when the pin
// moves.
func TestEnvNamesAreReadByThePinnedKataDeploy(t *testing.T) {
	version, names := kataDeployEnv(t)
	if version != pins.KataDeploy {
		t.Fatalf("testdata/kata-deploy-env.txt lists kata-deploy %s's variables, but the pin is %s: re-read them at the new tag", version, pins.KataDeploy)
	}
	for _, shims := range [][]string{nil, {"qemu"}, {"clh"}, {"clh", "qemu"}} {
		a := kvm()
		a.Shims = shims
		a.ExternalRuntimeClasses = shims != nil
		for _, c := range daemonSet(t, a).Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if !names[e.Name] {
					t.Errorf("shims %v: container %s sets %s, which kata-deploy %s does not read", shims, c.Name, e.Name, version)
				}
			}
		}
	}
}

// The shims kata-deploy installs are exactly the spec's, under the names the
// pinned version reads, and the default is one of them.
func TestEnvInstallsExactlyTheDeclaredShims(t *testing.T) {
	for _, tc := range []struct {
		shims      []string
		want, dflt string
	}{
		{nil, "qemu clh", "qemu"},
		{[]string{"clh"}, "clh", "clh"},
		{[]string{"clh", "qemu"}, "clh qemu", "qemu"},
	} {
		a := kvm()
		a.Shims = tc.shims
		env := map[string]string{}
		for _, e := range daemonSet(t, a).Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["SHIMS"] != tc.want || env["DEFAULT_SHIM"] != tc.dflt {
			t.Errorf("shims %v: SHIMS=%q DEFAULT_SHIM=%q, want %q and %q", tc.shims, env["SHIMS"], env["DEFAULT_SHIM"], tc.want, tc.dflt)
		}
	}
}
