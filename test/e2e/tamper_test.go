//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/verify"
)

// tamperStack is the stack TestTamperingCaughtByVerify provisions examples/local into.
const tamperStack = "tamper-e2e"

// TestTamperingCaughtByVerify makes two out-of-band edits that `verify
// --strict`, the CI gate, used to pass: a guardrail switched off by a
// matchCondition (V14 and V15 must fail naming it), and `kubectl set image`
// on a warm pod, which leaves the pod's sandbox labelled current, so the
// controller would hand it to the next claim (V07 must fail naming the
// image). `up` must put each back (for the pod: delete its sandbox, which
// the pool refills) and verify --strict must then pass.
func TestTamperingCaughtByVerify(t *testing.T) {
	e := live
	if e.nodes == "fake" {
		t.Skip("kwok nodes run no container: `kubectl set image` changes nothing that runs")
	}
	r := e.runPaddock(t, nil, "up", example, "--stack", tamperStack)
	if r.code != 0 {
		t.Fatalf("paddock up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	defer e.destroyAndWait(t, nil, []string{namespace}, example, "--stack", tamperStack)
	eventually(t, "warm pool ready", 120*time.Second, func() error { return poolReady(e, replicas) })

	verifyStrict := func() (*verify.Report, int) {
		t.Helper()
		r := e.runPaddock(t, nil, "verify", example, "--stack", tamperStack, "--strict", "--format", "json")
		var rep verify.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("verify JSON (exit %d): %v\n%s\n%s", r.code, err, r.stdout, tail(r.stderr, 20))
		}
		return &rep, r.code
	}
	failing := func(rep *verify.Report, id, says string) bool {
		for _, res := range statusOf(rep, id) {
			if res.Status == verify.Fail && strings.Contains(res.Reason, says) {
				return true
			}
		}
		return false
	}
	clean := func(when string) {
		t.Helper()
		rep, code := verifyStrict()
		for _, res := range rep.Results {
			if res.Status != verify.Pass {
				t.Errorf("%s: %s [%s] %s: %s", when, res.ID, res.Subject, res.Status, res.Reason)
			}
		}
		if code != 0 {
			t.Errorf("%s: verify --strict exited %d", when, code)
		}
	}
	clean("before any edit")

	t.Run("a guardrail switched off by a matchCondition", func(t *testing.T) {
		guardrail := "paddock-local-demo-team-a-claims"
		if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, "patch", "validatingadmissionpolicy", guardrail, "--type=merge",
			"-p", `{"spec":{"matchConditions":[{"name":"off","expression":"false"}]}}`); err != nil {
			t.Fatal(err)
		}
		rep, code := verifyStrict()
		if code == 0 {
			t.Errorf("verify --strict exited 0 with the guardrail switched off")
		}
		if !failing(rep, "V14", "matchCondition") {
			t.Errorf("V14 does not fail naming the matchCondition: %+v", statusOf(rep, "V14"))
		}
		if !failing(rep, "V15", "spec.matchConditions") {
			t.Errorf("V15 does not fail naming spec.matchConditions: %+v", statusOf(rep, "V15"))
		}
		up := e.runPaddock(t, nil, "up", example, "--stack", tamperStack)
		if up.code != 0 || !strings.Contains(up.stdout, "ValidatingAdmissionPolicy "+guardrail) {
			t.Fatalf("up: exit %d, does not name the guardrail:\n%s\n%s", up.code, up.stdout, tail(up.stderr, 20))
		}
		clean("after up")
	})

	t.Run("kubectl set image on a warm pod", func(t *testing.T) {
		var pod string
		for sb := range poolSandboxes(t, e) {
			pod = sb
			break
		}
		if pod == "" {
			t.Fatal("no warm sandbox")
		}
		// The node's own pause image: present, so the pod stays Ready and only
		// what it runs changed.
		if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, "set", "image", "-n", namespace, "pod/"+pod, "agent="+localcluster.PauseImage); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the warm pod runs the other image and is ready", 120*time.Second, func() error {
			p, err := e.kube.CoreV1().Pods(namespace).Get(ctxTimeout(5*time.Second), pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "agent" && cs.Ready && strings.Contains(cs.Image, "pause") {
					return nil
				}
			}
			return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
		})
		rep, code := verifyStrict()
		if code == 0 || !failing(rep, "V07", "runs image "+localcluster.PauseImage) {
			t.Errorf("verify --strict (exit %d) does not fail V07 naming the image: %+v", code, statusOf(rep, "V07"))
		}
		up := e.runPaddock(t, nil, "up", example, "--stack", tamperStack)
		if up.code != 0 {
			t.Fatalf("up: exit %d\n%s\n%s", up.code, up.stdout, tail(up.stderr, 20))
		}
		if want := "paddock up: deleted sandbox " + pod + " of warm pool " + namespace + "/" + poolName + ": its pod's container agent runs image " + localcluster.PauseImage; !strings.Contains(up.stdout, want) {
			t.Errorf("up does not say it deleted the tampered sandbox (%q):\n%s", want, up.stdout)
		}
		if poolSandboxes(t, e)[pod] {
			t.Errorf("the tampered sandbox %s is still in the pool after up", pod)
		}
		eventually(t, "warm pool ready after up", 120*time.Second, func() error { return poolReady(e, replicas) })
		clean("after up")
	})
}
