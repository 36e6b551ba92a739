//go:build race

package oauth_test

// raceEnabled: the race detector slows every call about tenfold.
const raceEnabled = true
