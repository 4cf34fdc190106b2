//go:build !race

package cmd

// raceDetector: the tests run under -race.
const raceDetector = false
