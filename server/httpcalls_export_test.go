package server

// ErrClientCancelledForTest is errClientCancelled, for the black-box
// tests.
var ErrClientCancelledForTest = errClientCancelled
