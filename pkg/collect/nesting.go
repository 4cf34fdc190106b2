package collect

// The sources that nest a target's blocking objects as targets of their own
// (objects.go reads them).
func init() {
	register(source{name: "dependents", read: (*Collector).readDependents})
	register(source{name: "claim users", read: (*Collector).readClaimUsers})
	register(source{name: "volume attachments", after: []string{"namespace contents", "dependents", "claim users"}, read: (*Collector).readVolumeAttachments})
}
