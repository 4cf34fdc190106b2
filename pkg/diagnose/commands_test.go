package diagnose

import (
	"al.essio.dev/pkg/shellescape"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Names that would run a command of their own if pasted unquoted.
const (
	hostilePod       = "web$(touch PWNED)-0"
	hostileNamespace = "shop;touch PWNED;#"
	hostileNode      = "node`touch PWNED`"
	hostileWebhook   = "guard' ; touch PWNED ; '"
	hostileFinalizer = "acme.io/keep\"$(touch PWNED)"
)

// stubs puts programs that only record their arguments first on PATH, so a
// suggested command can be run for real: any injected command (touch) runs
// too, and leaves its file behind.
func stubs(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n{ printf '%s' \"$(basename \"$0\")\"; for a in \"$@\"; do printf '\\037%s' \"$a\"; done; printf '\\036'; } >> \"$CALLS\"\n"
	for _, p := range []string{"kubectl", "jq", "grep", "findmnt", "journalctl", "crictl", "systemctl"} {
		if err := os.WriteFile(filepath.Join(bin, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

// shell is what suggested commands are for, bash (and zsh): a name the
// report shows escaped is quoted $'...', which dash, often sh, reads as $
// and '...'.
const shell = "bash"

// run runs a suggested command in a shell and returns each program call's argv.
func runSuggested(t *testing.T, dir, log, cmd string) [][]string {
	t.Helper()
	_ = os.Remove(log)
	c := exec.Command(shell, "-c", cmd)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "CALLS="+log)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		t.Errorf("%s: %v: %s", cmd, err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatalf("running %s ran a command planted in a name", cmd)
	}
	data, _ := os.ReadFile(log)
	var calls [][]string
	for _, rec := range strings.Split(strings.TrimSuffix(string(data), "\x1e"), "\x1e") {
		if rec != "" {
			calls = append(calls, strings.Split(rec, "\x1f"))
		}
	}
	return calls
}

// Every remediation command for objects with hostile names runs exactly the
// programs it names, with those names as whole arguments.
func TestSuggestedCommandsQuoteClusterNames(t *testing.T) {
	dead := terminatingPod(10*time.Minute, 30)
	dead.Name, dead.Namespace, dead.Spec.NodeName = hostilePod, hostileNamespace, hostileNode
	dead.Finalizers = []string{hostileFinalizer}
	stuck := stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)
	stuck.Name, stuck.Namespace = hostilePod, hostileNamespace
	hook := deletePodsWebhook(admissionregistrationv1.Fail)
	hook.Name = hostileWebhook
	ns := terminatingNamespace(10*time.Minute, allConditions()...)
	ns.Name = hostileNamespace
	ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerName(hostileFinalizer)}
	held := heldObject("ConfigMap", "configmaps", hostilePod, 10*time.Minute, "foregroundDeletion", hostileFinalizer)
	held.Object.SetNamespace(hostileNamespace)
	held.Ref.Namespace = hostileNamespace

	s := snap(dead, stuck, ns, node(hostileNode, corev1.ConditionUnknown, taintUnreachable), lease(hostileNode, time.Hour),
		node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
	s.Targets = append(s.Targets, held)
	held.Dependents = []*observed.Target{}
	s.Admission = observed.NewAdmission()
	s.Admission.Validating = []admissionregistrationv1.ValidatingWebhookConfiguration{hook}
	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 0
	s.Controllers = &observed.Controllers{}

	dir, log := stubs(t)
	var commands []string
	var walk func(items []report.Item)
	walk = func(items []report.Item) {
		for _, it := range items {
			for _, c := range it.Causes {
				for _, st := range c.Remediation {
					if st.Command != "" {
						commands = append(commands, st.Command)
					}
				}
				walk(c.BlockedBy)
			}
		}
	}
	walk(Diagnose(s).Items)
	hostile := []string{hostilePod, hostileNamespace, hostileNode, hostileWebhook, hostileFinalizer}
	seen := map[string]bool{}
	for _, cmd := range commands {
		for _, call := range runSuggested(t, dir, log, cmd) {
			for _, arg := range call[1:] {
				for _, h := range hostile {
					if arg == h || strings.HasSuffix(arg, "="+h) || strings.Contains(arg, jsonText(h)) {
						seen[h] = true
					}
				}
			}
		}
	}
	for _, h := range hostile {
		if !seen[h] {
			t.Errorf("no command passed %q as an argument; commands: %q", h, commands)
		}
	}
	if !slices.ContainsFunc(commands, func(c string) bool { return strings.Contains(c, "--force") }) {
		t.Errorf("the force delete was not among the commands: %q", commands)
	}
}

// Any string quoted as a word reaches the program whole.
func FuzzCommandQuoting(f *testing.F) {
	for _, s := range []string{hostilePod, hostileNamespace, hostileNode, hostileWebhook, hostileFinalizer, "", "a b", "'", "\\", "$HOME", "!x", "\n", "é",
		"web-0\u3164", "web-0\u0338", "a\u00a0'!\\b", "\x1b[2J\x7f\u009b", "\xff\xed\xa0\x80", "\u202e\U000e0041", "$'x'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			t.Skip("argv cannot hold NUL")
		}
		if !report.Escaped(s) && shellWord(s) != shellescape.Quote(s) {
			t.Fatalf("%q is quoted %q; shellescape quotes it %q", s, shellWord(s), shellescape.Quote(s))
		}
		cmd := command("printf", "%s", s)
		out, err := exec.Command(shell, "-c", cmd).Output()
		if err != nil || string(out) != s {
			t.Fatalf("%q -> %q (%v)", s, out, err)
		}
		if len(cmd) < 2000 && report.Safe(cmd) != cmd {
			t.Fatalf("%q is quoted %q, which the report shows as %q", s, cmd, report.Safe(cmd))
		}
	})
}

// A wait's timeout is a Go duration without zero units, as --timeout reads it.
func TestWaitCommand(t *testing.T) {
	for d, want := range map[time.Duration]string{90 * time.Second: "1m30s", 2 * time.Minute: "2m", time.Hour: "1h", time.Hour + 5*time.Second: "1h0m5s", 1500 * time.Millisecond: "2s"} {
		if got := goDuration(d); got != want {
			t.Errorf("goDuration(%s) = %q, want %q", d, got, want)
		}
	}
	if got := waitCommand(report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0"}, 2*time.Minute); got != "kubectl terminating wait pod/web-0 -n shop --timeout 2m" {
		t.Errorf("waitCommand = %q", got)
	}
}

// Issue 35: a name that begins with "-" (kinds such as Role take any path
// segment) is never read by kubectl as a flag: in every suggested command it
// comes after "--", or inside TYPE/NAME.
func TestNamesThatLookLikeFlags(t *testing.T) {
	role := heldObject("Role", "roles.rbac.authorization.k8s.io", "-rf", 10*time.Minute, "example.com/cleanup")
	it := Diagnose(snapOf(role)).Items[0]
	seen := 0
	for _, c := range it.Causes {
		for _, s := range c.Remediation {
			for _, field := range strings.Fields(s.Command) {
				if strings.Trim(field, `'"`) != "-rf" {
					continue
				}
				seen++
				if !strings.Contains(s.Command, " -- -rf") && !strings.Contains(s.Command, " -- '-rf'") {
					t.Errorf("%s: -rf is not after --: %s", c.Code, s.Command)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatalf("no command names the role: %+v", it.Causes)
	}
}

// removeFinalizerPatch writes what the encoder writes of the two
// operations, for any finalizer: quotes, HTML's characters (escaped by the
// encoder), invalid UTF-8, the empty name (its value left out).
func TestRemoveFinalizerPatchIsTheEncodersText(t *testing.T) {
	for _, f := range []string{"kubernetes.io/pvc-protection", hostileFinalizer, "a<b>&c", "\u2028x\xff", "tab\there", ""} {
		for _, index := range []int{0, 7, 12} {
			path := "/metadata/finalizers/" + strconv.Itoa(index)
			want := jsonText([]patchOp{{Op: "test", Path: path, Value: f}, {Op: "remove", Path: path}})
			if got := removeFinalizerPatch(index, f); got != want {
				t.Errorf("removeFinalizerPatch(%d, %q) = %s, want %s", index, f, got, want)
			}
		}
	}
}
