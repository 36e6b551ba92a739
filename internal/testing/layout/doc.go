// Package layout holds the tests that keep the module's import graph in
// the shape its packages' roles ask for (see [Rules]) and the core's
// exported surface within its budget (see [ExportedNames]); nothing here
// is API, and nothing but those tests uses it.
//
// The roles under internal/:
//
//   - internal/core/...: code the public packages share (the call state,
//     schema reflection, the bound on echoed values, log redaction, the
//     declaration rules the registry and registry/vet apply);
//   - internal/serve/...: the server's own mechanisms (work in flight,
//     the one outcome classifier, the stateless transport, the call's
//     stack);
//   - internal/sdkfix/...: go-sdk workarounds, one package per defect,
//     each naming its issue or pull request and holding a canary test;
//   - internal/testing/...: test support, for tests and bench/ only.
package layout
