package report

import "fmt"

// Count is n and a noun phrase whose last word is plural unless n is 1:
// Count(1, "object") is "1 object", Count(3, "more step") "3 more steps".
// The nouns it is given take an s; every count printed for a person goes
// through it, never "(s)".
func Count(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}
