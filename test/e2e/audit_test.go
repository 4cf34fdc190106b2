package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// checkReadOnly proves from the apiserver's audit log that the plugin (known
// by its user agent) only ever read: TestMain runs it after every test.
// With allowNone, a log without any request of the plugin passes (a run of a
// few tests that never touched this lab); the whole suite always touches it.
func checkReadOnly(auditLog string, allowNone bool) error {
	f, err := os.Open(auditLog)
	if err != nil {
		return err
	}
	defer f.Close()
	reads := map[string]bool{"get": true, "list": true, "watch": true}
	var total int
	var writes []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Verb       string `json:"verb"`
			UserAgent  string `json:"userAgent"`
			RequestURI string `json:"requestURI"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("audit log line: %w", err)
		}
		if !strings.HasPrefix(ev.UserAgent, "kubectl-terminating/") {
			continue
		}
		total++
		switch {
		case reads[ev.Verb]:
		case strings.HasSuffix(ev.UserAgent, " fix") && expectedFixWrite(ev.Verb+" "+ev.RequestURI):
			// fix's confirmed plan, checked write by write by its test
		default:
			writes = append(writes, ev.Verb+" "+ev.RequestURI)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	switch {
	case total == 0 && !allowNone:
		return fmt.Errorf("no request by kubectl-terminating in the audit log: the check proves nothing")
	case len(writes) > 0:
		return fmt.Errorf("kubectl-terminating wrote to the cluster %d times: %v", len(writes), writes)
	}
	fmt.Printf("e2e: audit log: %d requests by kubectl-terminating, all reads but fix's planned writes\n", total)
	return nil
}

// fixWrites are the writes the fix tests planned and confirmed ("verb
// requestURI"): the only writes the plugin may make.
var fixWrites = struct {
	sync.Mutex
	planned map[string]bool
}{planned: map[string]bool{}}

func expectFixWrites(writes ...string) {
	fixWrites.Lock()
	defer fixWrites.Unlock()
	for _, w := range writes {
		fixWrites.planned[w] = true
	}
}

func expectedFixWrite(w string) bool {
	fixWrites.Lock()
	defer fixWrites.Unlock()
	return fixWrites.planned[w]
}

// auditedWrites lists the writes in the audit log whose user agent ends
// with suffix, as "verb requestURI".
func auditedWrites(auditLog, suffix string) ([]string, error) {
	data, err := os.ReadFile(auditLog)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			Verb, UserAgent, RequestURI, Stage string
		}
		if json.Unmarshal([]byte(line), &ev) != nil || !strings.HasPrefix(ev.UserAgent, "kubectl-terminating/") || !strings.HasSuffix(ev.UserAgent, suffix) {
			continue
		}
		if ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch" && ev.Stage == "ResponseComplete" {
			out = append(out, ev.Verb+" "+ev.RequestURI)
		}
	}
	return out, nil
}
