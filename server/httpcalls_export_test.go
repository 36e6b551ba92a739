package server

// ErrClientCancelledForTest is errClientCancelled, for the black-box
// tests.
var ErrClientCancelledForTest = errClientCancelled

// ErrRequestEndedForTest is errRequestEnded, for the black-box tests.
var ErrRequestEndedForTest = errRequestEnded
