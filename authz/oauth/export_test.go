package oauth

import "testing"

// SetExchangeMissedHook makes f run whenever [Exchanger.Token] has
// missed its cache, before it joins or starts an exchange, until t ends.
func SetExchangeMissedHook(t testing.TB, f func()) {
	testHookExchangeMissed = f
	t.Cleanup(func() { testHookExchangeMissed = nil })
}
