package collect

// The sources that nest a target's blocking objects as targets of their own
// (objects.go reads them).
func init() {
	// After the namespace scans too: which targets need their dependents is
	// asked of every target (diagnose.Needs), a namespace's by its scan's
	// result, which the scan writes meanwhile (a data race, found by -race).
	register(source{name: "dependents", after: []string{"namespace contents"}, read: (*Collector).readDependents})
	// After the namespace scans: a claim a namespace's scan finds held is
	// judged by its users too.
	register(source{name: "claim users", after: []string{"namespace contents"}, read: (*Collector).readClaimUsers})
	register(source{name: "referrers", after: []string{"namespace contents"}, read: (*Collector).readReferrers})
	register(source{name: "volume attachments", after: []string{"namespace contents", "dependents", "claim users"}, read: (*Collector).readVolumeAttachments})
}
