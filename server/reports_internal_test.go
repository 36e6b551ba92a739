package server

import (
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
)

// TestReporterOf: the HTTP layers find the reporting of a server built by
// New, fall back to slog.Default for any other, and the table does not
// keep a server alive.
func TestReporterOf(t *testing.T) {
	var errs []error
	log := slog.New(slog.DiscardHandler)
	s, err := New(Options{Authorizer: authz.AllowAll(), Logger: log, OnError: func(err error) { errs = append(errs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	r := reporterOf(s)
	if r.log.Handler() == slog.Default().Handler() || r.onError == nil {
		t.Fatalf("reporterOf(a server of New) = %+v, want its Options' logger and OnError", r)
	}
	r.error("test", errors.New("test"))
	if len(errs) != 1 {
		t.Errorf("OnError got %v", errs)
	}
	if r := reporterOf(mcp.NewServer(&mcp.Implementation{Name: "raw"}, nil)); r.onError != nil || r.log == nil {
		t.Errorf("reporterOf(a raw server) = %+v, want slog.Default and no OnError", r)
	}

	p := weak.Make(s)
	s = nil // the last reference: the table must not keep it
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		reporters.mu.Lock()
		_, ok := reporters.m[p]
		reporters.mu.Unlock()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a collected server is still remembered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
