package diagnose

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Suggested commands are pasted into a shell by people who trust them, and
// every name in them comes from the cluster: anyone who can name a Role
// could otherwise plant a command in a cluster admin's diagnosis. So every
// word is shell-quoted, as al.essio.dev/pkg/shellescape quotes (plain words
// stay as they are; its Quote is the tests' oracle), and JSON is built by a
// marshaller, never by pasting strings.
//
// A word holding a rune the report shows escaped (report.Escaped: a control,
// an invisible filler, a space that is not ASCII's, an overlay, bytes that
// are not UTF-8) is written in ANSI-C quotes, $'...', with those runes as
// \xHH escapes of their UTF-8 bytes: the command names the exact object and
// shows what is odd in its name (a name ending in U+3164 prints as
// $'web-0\xe3\x85\xa4', not as a 'web-0' that hides it), and the renderer,
// which escapes what it prints, has nothing left to escape in it (its \u3164
// inside '...' would name another object). $'...' is bash's and zsh's (also
// ksh's, and POSIX sh's since 2024, but not dash's): suggested commands are
// for bash and zsh (docs/runbooks.md). \xHH, not \uXXXX: bash turns \u
// into the locale's charset, and into the literal text \u3164 in the C
// locale, and bash 3.2 (macOS) has no \u.

// command is one program and its arguments, each a shell word.
func command(program string, args ...string) string {
	var b strings.Builder
	b.WriteString(shellWord(program))
	writeWords(&b, args...)
	return b.String()
}

// writeWords writes each word after a space, quoted.
func writeWords(b *strings.Builder, words ...string) {
	for _, w := range words {
		b.WriteByte(' ')
		b.WriteString(shellWord(w))
	}
}

// shellWord quotes one word: as shellescape does (plain words stay plain),
// or in ANSI-C quotes when the report would show some of it escaped.
func shellWord(s string) string {
	if plainWord(s) { // most words: a name, a flag (thousands a list -A)
		return s
	}
	if !report.Escaped(s) {
		return quote(s)
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0:
			// No argument can hold NUL: a shell cuts $'web-0\x00x' to web-0,
			// another object. The word is written as its text, \x00, as the
			// report shows it: it names no object but one of that name.
			b.WriteString(`\\x00`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError && size == 1, report.EscapedRune(r):
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'', r == '!':
			// ' would end the quote; ! written \x21 leaves no interactive
			// shell's history expansion to know $'...' to leave it alone.
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}

// pipe joins commands into a pipeline.
func pipe(cmds ...string) string { return strings.Join(cmds, " | ") }

// then joins commands run one after the other.
func then(cmds ...string) string { return strings.Join(cmds, "; ") }

// jsonText is v as JSON, for a patch or a jq program.
// patchOp is one operation of a JSON patch (RFC 6902), its fields in the
// order a reader expects them.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value,omitempty"`
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null" // plain strings, maps and slices always marshal
	}
	return string(b)
}

// quote is shellescape.Quote's rule, without the regexp it runs on each
// word: under the race detector, which turns sync.Pool off, its matcher
// allocated 1.9 GB for a file of 19,400 finalizer-removal steps. A word of
// letters, digits and _@%+=:,./- stays as it is (shellWord returns it
// before it gets here); any other is single-quoted, each ' in it written
// '"'"'.
func quote(s string) string {
	if s == "" {
		return "''"
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// plainWord: s is a non-empty word of plainInShell's characters.
func plainWord(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf || !plainByte[s[i]] {
			return false
		}
	}
	return s != ""
}

// plainByte is plainInShell for each ASCII byte, looked up once.
var plainByte = func() (plain [utf8.RuneSelf]bool) {
	for c := range plain {
		plain[c] = plainInShell(rune(c))
	}
	return plain
}()

// plainInShell: shellescape's \w@%+=:,./- (\w is ASCII's [0-9A-Za-z_]).
func plainInShell(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)
}

// kubectl is a kubectl command; ns adds -n, after the verb and the names,
// when the object is namespaced.
func kubectl(ns string, args ...string) string {
	if ns == "" {
		return command("kubectl", args...)
	}
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
	if i < 0 {
		i = len(args)
	}
	var b strings.Builder // the words written in place: a copy of args for each of thousands of commands cost more
	b.WriteString("kubectl")
	writeWords(&b, args[:i]...)
	writeWords(&b, "-n", ns)
	writeWords(&b, args[i:]...)
	return b.String()
}

// kubectlOn is kubectl VERB RESOURCE NAME FLAGS... on one named object. A
// name that begins with "-" (a Role's, say: some kinds take any path
// segment) would read as a flag: it then comes last, after "--", so that
// kubectl takes it as the name it is.
func kubectlOn(ns, verb, resource, name string, flags ...string) string {
	if strings.HasPrefix(name, "-") {
		return kubectl(ns, append(append([]string{verb, resource}, flags...), "--", name)...)
	}
	return kubectl(ns, append([]string{verb, resource, name}, flags...)...)
}

// endpointsCommand lists a service's EndpointSlices.
func endpointsCommand(ns, service string) string {
	return kubectl(ns, "get", "endpointslices", "-l", "kubernetes.io/service-name="+service)
}

// onNode lists the pods on a node, filtered by an extended regexp.
func onNode(node, grepPattern string) string {
	return pipe(kubectl("", "get", "pods", "-A", "-o", "wide", "--field-selector", "spec.nodeName="+node), command("grep", "-Ei", grepPattern))
}

// waitCommand waits for the object TYPE/NAME to go, for at most timeout:
// the plugin's wait prints the diagnosis if it is still there then.
func waitCommand(ref report.ObjectRef, timeout time.Duration) string {
	return kubectl(ref.Namespace, "terminating", "wait", report.Name(ref), "--timeout", goDuration(timeout))
}

// goDuration is d to the second as --timeout reads it, without trailing
// zero units: 1m30s, 2m, 1h.
func goDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// finalizeNamespace rewrites a namespace's spec.finalizers with a jq program
// and writes them through its finalize subresource (the only way to change them).
func finalizeNamespace(name, jqProgram string) string {
	return pipe(kubectlOn("", "get", "namespace", name, "-o", "json"), command("jq", jqProgram),
		kubectl("", "replace", "--raw", "/api/v1/namespaces/"+name+"/finalize", "-f", "-"))
}

// forceDeleteCommand removes a pod from the API without waiting for its kubelet.
func forceDeleteCommand(pod *corev1.Pod) string {
	return kubectlOn(pod.Namespace, "delete", "pod", pod.Name, "--grace-period=0", "--force")
}

// mountsOnNode looks, on the pod's node, for its mounts and its kubelet's unmount errors.
func mountsOnNode(code catalog.Code, id string, pod *corev1.Pod) report.Step {
	uid := string(pod.UID)
	return onTheNode(pod.Spec.NodeName, step(code, id,
		then(pipe(command("findmnt", "-l"), command("grep", uid)), pipe(command("journalctl", "-u", "kubelet"), command("grep", uid), command("grep", "-i", "unmount")))))
}
