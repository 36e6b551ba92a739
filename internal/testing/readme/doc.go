// Package readme holds the tests that keep README.md true to the code:
//
//   - every ```go block compiles. A block is either a whole file (it has a
//     package clause), formatted as gofmt formats it, importing no
//     internal package, and built as it is as a package of its own inside
//     the module, against the module's packages and go.mod's
//     dependencies, offline (GOPROXY=off); or it is marked, on the line
//     above its fence, with <!-- not compiled: REASON -->. A fragment
//     without the mark fails: nothing is wrapped or guessed, so a sample
//     that compiles here compiles for a reader who copies it. A failure
//     names the README's line and gives the compiler's words;
//   - the packages table lists every package of the module, and every
//     module nested in the repository (bench/, deploy/), and no row names
//     a package that does not exist;
//   - every repository file and every Test, Benchmark, Fuzz or Example
//     function that README.md or the deployment kit's files (deploy/) cite
//     exists.
//
// Nothing here is API.
package readme
