// Package bench holds the project's cross-library performance
// benchmarks: toolroute against raw go-sdk and mark3labs/mcp-go. It is a
// module of its own, so that the main module does not depend on mcp-go;
// bench/run runs it with the main module's benchmarks.
package bench
