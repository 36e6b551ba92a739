//go:build !race

package oauth_test

const raceEnabled = false
