//go:build race

package server_test

// raceEnabled: the race detector slows every call about tenfold.
const raceEnabled = true
