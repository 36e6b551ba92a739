package permission

// The in-memory stores, for tests that share one between Checkers (as
// replicas share Redis).
var (
	NewAnswerStore = newAnswerStore
	NewNonceStore  = newNonceStore
)
