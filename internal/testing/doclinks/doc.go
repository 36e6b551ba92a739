// Package doclinks holds a test that every doc link in the module's Go
// comments resolves. A bracketed name that names nothing (a method written
// without its type, a package its file does not import, a link with an "s"
// glued on for a plural) is shown by go doc and pkg.go.dev as plain text, and the
// reader loses the link without anyone noticing.
//
// The test parses every package of the module with go/doc's own comment
// parser, so what counts as a link is exactly what go doc renders. Nothing
// here is API.
package doclinks
