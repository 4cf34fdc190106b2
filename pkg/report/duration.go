package report

import (
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// HumanDuration renders a duration exactly as kubectl's AGE column does
// (90s, 5m30s, 130m, 3h10m, 4d): apimachinery's own function.
func HumanDuration(d time.Duration) string { return duration.HumanDuration(d.Round(time.Second)) }

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
