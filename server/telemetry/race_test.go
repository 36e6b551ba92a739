//go:build race

package telemetry_test

// raceEnabled: the race detector slows every call about tenfold.
const raceEnabled = true
