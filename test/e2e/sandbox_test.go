//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/localcluster"
)

// claimedPod is the pod of a claimed sandbox, once it runs. On kwok nodes no
// container runs, so the tests that look into it skip.
func claimedPod(t *testing.T, e *env, sandbox string) string {
	t.Helper()
	if e.nodes == "fake" {
		t.Skip("kwok nodes run no container (PADDOCK_E2E_NODES=fake)")
	}
	if sandbox == "" {
		t.Fatal("no sandbox was claimed")
	}
	var pod string
	eventually(t, "claimed sandbox's pod running", 60*time.Second, func() error {
		sb, err := e.dyn.Resource(sandboxesGVR).Namespace(namespace).Get(ctxT(t, 5*time.Second), sandbox, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = sb.GetName()
		if n := sb.GetAnnotations()[sandboxv1beta1.SandboxPodNameAnnotation]; n != "" {
			pod = n
		}
		p, err := e.kube.CoreV1().Pods(namespace).Get(ctxT(t, 5*time.Second), pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %s", pod, p.Status.Phase)
		}
		return nil
	})
	return pod
}

// sandboxExec runs a command in the sandbox's agent container with kubectl.
func sandboxExec(t *testing.T, e *env, pod string, args ...string) (string, error) {
	t.Helper()
	opts := k8s.NewKubectlOptions("", e.kubeconfig, namespace)
	return k8s.RunKubectlAndGetOutputE(t, opts, append([]string{"exec", pod, "-c", "agent", "--"}, args...)...)
}

// assertSandboxHardened checks, from inside a running sandbox, each control its
// template declares: the kernel is gVisor's, the UID is the template's non-root
// one, the root filesystem refuses writes, no capability is left and no
// service-account token is mounted.
func assertSandboxHardened(t *testing.T, e *env, pod string) {
	t.Helper()
	for _, c := range []struct {
		what string
		cmd  []string
		ok   func(out string, err error) bool
	}{
		{"the kernel is gVisor's", []string{"dmesg"}, func(o string, err error) bool { return err == nil && strings.Contains(o, "gVisor") }},
		{"runs as UID 10001 (the template default)", []string{"id", "-u"}, func(o string, err error) bool { return err == nil && strings.TrimSpace(o) == "10001" }},
		{"the root filesystem refuses a write", []string{"touch", "/var/tmp/e2e-probe"}, func(o string, err error) bool { return err != nil && strings.Contains(o, "Read-only") }},
		{"no capability (effective, permitted, bounding)", []string{"grep", "-E", "^Cap(Eff|Prm|Bnd):", "/proc/self/status"}, func(o string, err error) bool {
			return err == nil && strings.Count(o, "0000000000000000") == 3
		}},
		{"no service-account token", []string{"ls", "/var/run/secrets/kubernetes.io/serviceaccount"}, func(o string, err error) bool { return err != nil && strings.Contains(o, "No such file") }},
		{"/tmp is writable (the template's emptyDir)", []string{"touch", "/tmp/e2e-probe"}, func(o string, err error) bool { return err == nil }},
	} {
		out, err := sandboxExec(t, e, pod, c.cmd...)
		if !c.ok(out, err) {
			t.Errorf("sandbox %s: %s: %v gave %q (err %v)", pod, c.what, c.cmd, strings.TrimSpace(out), err)
		} else {
			t.Logf("sandbox %s: %s", pod, c.what)
		}
	}
}

// outsideName is a name only the outside resolver answers; its address is
// data in an answer, never dialled.
const (
	outsideName    = "outside.paddock.test"
	outsideAddress = "192.0.2.9"
)

// assertSandboxFenced sends traffic from a running sandbox to a pod the test
// starts in a namespace of its own (a listener and a DNS server, both shown
// working from this machine first) and to the cluster resolver: the first two
// must fail three times in a row, the resolver must answer.
func assertSandboxFenced(t *testing.T, e *env, pod string) {
	t.Helper()
	ip := startOutsidePod(t, e)

	// The outside pod works: this machine reaches its listener and its resolver.
	eventually(t, "the outside listener answers this machine", 30*time.Second, func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if strings.TrimSpace(line) != "outside" {
			return fmt.Errorf("read %q: %v", line, err)
		}
		return nil
	})
	eventually(t, "the outside resolver answers this machine", 30*time.Second, func() error {
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "udp", net.JoinHostPort(ip, "53"))
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := r.LookupIP(ctx, "ip4", outsideName)
		if err != nil || len(addrs) == 0 || addrs[0].String() != outsideAddress {
			return fmt.Errorf("lookup %s at %s: %v %v", outsideName, ip, addrs, err)
		}
		return nil
	})

	refused := func(what string, try func() bool) {
		t.Helper()
		streak := 0
		for i := 0; i < 10 && streak < 3; i++ {
			if try() {
				streak = 0
			} else {
				streak++
			}
		}
		if streak < 3 {
			t.Errorf("sandbox %s: %s was not refused three times in a row", pod, what)
		} else {
			t.Logf("sandbox %s: %s refused three times in a row", pod, what)
		}
	}
	refused("TCP to a pod outside the tenant ("+ip+":8080)", func() bool {
		out, err := sandboxExec(t, e, pod, "sh", "-c", "nc -w 2 "+ip+" 8080 </dev/null")
		return err == nil && strings.Contains(out, "outside")
	})
	refused("DNS to a resolver that is not the cluster's ("+ip+":53)", func() bool {
		out, _ := sandboxExec(t, e, pod, "nslookup", outsideName, ip)
		return strings.Contains(out, outsideAddress)
	})

	dns, err := e.kube.CoreV1().Pods(localcluster.DNSNamespace).Get(ctxT(t, 10*time.Second), localcluster.DNSPodName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the local stack's cluster resolver: %v", err)
	}
	eventually(t, "the cluster resolver answers the sandbox", 30*time.Second, func() error {
		out, _ := sandboxExec(t, e, pod, "nslookup", localcluster.DNSProbeName, dns.Status.PodIP)
		if !strings.Contains(out, localcluster.DNSProbeAddress) {
			return fmt.Errorf("nslookup %s %s: %s", localcluster.DNSProbeName, dns.Status.PodIP, out)
		}
		return nil
	})
}

// startOutsidePod starts, in a namespace of its own without any policy, a pod
// serving "outside" on TCP 8080 and a resolver on UDP 53 that knows
// outsideName; it returns the pod's address and removes both at the end.
func startOutsidePod(t *testing.T, e *env) string {
	t.Helper()
	ns := "e2e-outside"
	ctx := ctxT(t, 30*time.Second)
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	zero := int64(0)
	script := fmt.Sprintf("printf '%%s' '%s' > /tmp/Corefile; /bin/coredns -conf /tmp/Corefile & while :; do echo outside | nc -l -p 8080; done",
		localcluster.CorefileFor(outsideName, outsideAddress))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: ns},
		Spec: corev1.PodSpec{
			Tolerations:                   []corev1.Toleration{{Key: "sandbox.gke.io/runtime", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "outside", Image: localcluster.CoreDNSImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
	// The service account exists a moment after the namespace.
	eventually(t, "outside pod created", 30*time.Second, func() error {
		_, err := e.kube.CoreV1().Pods(ns).Create(ctxT(t, 10*time.Second), pod, metav1.CreateOptions{})
		return err
	})
	var ip string
	eventually(t, "outside pod running", 60*time.Second, func() error {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctxT(t, 5*time.Second), "outside", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		ip = p.Status.PodIP
		return nil
	})
	return ip
}

// TestLocalImageRefused: on the real node, a template naming an image the node
// does not hold is refused before anything is applied, naming the template and
// where its image is written; nothing of the platform reaches the cluster.
func TestLocalImageRefused(t *testing.T) {
	e := live
	if e.nodes == "fake" {
		t.Skip("kwok nodes run nothing, so any image is accepted there")
	}
	src, err := os.ReadFile(filepath.Join(e.repo, example, "platform.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.NewReplacer(
		`"localhost/paddock/busybox:v1"`, `"python:3.12-slim"`,
		`name = "local-demo"`, `name = "refused-demo"`,
		`tenant "team-a"`, `tenant "team-r"`,
	).Replace(string(src))
	dir := t.TempDir()
	file := filepath.Join(dir, "platform.hcl")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(spec, "\n") {
		if strings.Contains(l, `"python:3.12-slim"`) && strings.Contains(l, "image") {
			line = i + 1
		}
	}
	r := e.runPaddock(t, nil, "up", dir)
	if r.code == 0 {
		t.Fatalf("up of a template whose image the node lacks succeeded:\n%s", r.stdout)
	}
	for _, want := range []string{fmt.Sprintf("%s:%d:", file, line), `template "agent"`, `image "python:3.12-slim" is not on the node`, localcluster.SandboxImage} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := e.kube.CoreV1().Namespaces().Get(ctxT(t, 10*time.Second), "agents-team-r", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused platform's namespace exists (err %v): something was applied", err)
	}
}
