// Package callreg is the registry of the stateless HTTP requests in
// flight by caller and JSON-RPC call id, through which a
// notifications/cancelled that arrives in a request of its own finds the
// calls it names: over stateless HTTP, a 2025 client's cancellation
// reaches a session that knows nothing of the call, so the server looks
// the call up here, under the same caller, and ends its request. Nothing
// here is API. It is part of the go-sdk #1093 workaround: see
// internal/sdkfix/statelesscancel.
package callreg
