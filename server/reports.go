package server

import (
	"log/slog"
	"runtime"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reporter is where a server's layers report: a logger (redacting) and
// [Options.OnError] (nil: none); and, for a server [New] built, what its
// stateless transport needs to know of its tools: headerParams, the
// statelesshttp.Options.HeaderParams of its described tools (nil: the
// transport serves no 2026-07-28 tools/call itself).
type reporter struct {
	log          *slog.Logger
	onError      func(error)
	lists        *listeners // Options.ListChanged's, or nil
	headerParams func(name string) bool
}

func (o *Options) reporter() reporter { return reporter{log: o.logger(), onError: o.OnError} }

// error logs err and hands it to onError.
func (r reporter) error(msg string, err error) {
	r.log.Error(msg, slog.Any("error", err))
	if r.onError != nil {
		r.onError(err)
	}
}

// reporters remembers, for every *mcp.Server built by [New], the
// reporting of its Options, so that the HTTP layers serving it
// ([HTTPHandler], [NewHTTPServer], [HTTP]) report where the server does:
// a service sets its Logger and OnError once, in [Options]. The SDK's
// server carries nothing of ours, so the table is keyed by a weak pointer
// to it: it never keeps a server alive, and a cleanup forgets a server
// once it is collected (its entry holds nothing that refers back to it).
var reporters struct {
	mu sync.Mutex
	m  map[weak.Pointer[mcp.Server]]reporter
}

// rememberReporter records r as s's reporting; New calls it.
func rememberReporter(s *mcp.Server, r reporter) {
	p := weak.Make(s)
	reporters.mu.Lock()
	if reporters.m == nil {
		reporters.m = make(map[weak.Pointer[mcp.Server]]reporter)
	}
	reporters.m[p] = r
	reporters.mu.Unlock()
	runtime.AddCleanup(s, forgetReporter, p)
}

func forgetReporter(p weak.Pointer[mcp.Server]) {
	reporters.mu.Lock()
	defer reporters.mu.Unlock()
	delete(reporters.m, p)
}

// reporterOf is the reporting of s's [Options] if [New] built s, else
// [slog.Default] (through a [RedactingHandler]) and no OnError.
func reporterOf(s *mcp.Server) reporter {
	reporters.mu.Lock()
	r, ok := reporters.m[weak.Make(s)]
	reporters.mu.Unlock()
	if !ok {
		return reporter{log: redacting(slog.Default())}
	}
	return r
}
