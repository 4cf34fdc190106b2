package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
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
		if !reads[ev.Verb] {
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
	fmt.Printf("e2e: audit log: %d requests by kubectl-terminating, all reads\n", total)
	return nil
}
