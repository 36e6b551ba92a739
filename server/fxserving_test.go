package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
)

const (
	servingHTTP  = `"msg":"toolroute: serving MCP over HTTP"`
	servingStdio = `"msg":"toolroute: serving MCP over stdio"`
)

// readCounter counts the reads of the reader it wraps.
type readCounter struct {
	io.ReadCloser
	reads atomic.Int64
}

func (r *readCounter) Read(p []byte) (int, error) {
	r.reads.Add(1)
	return r.ReadCloser.Read(p)
}

// TestFxServingAfterWarmUp: while a service's warm-up runs, no
// transport says it is serving (over HTTP the listener is open, for
// /healthz and /readyz; over stdio nothing is read); once it is done,
// each says so once, wherever the transport's option is: after
// server.Module, or in an fx.Module of its own before it (whose invokes
// fx runs first).
func TestFxServingAfterWarmUp(t *testing.T) {
	for _, tt := range []struct {
		name    string
		serving string
		stdio   bool
		first   bool // the transport's option in a module before server.Module
	}{
		{"http", servingHTTP, false, false},
		{"http first", servingHTTP, false, true},
		{"stdio", servingStdio, true, false},
		{"stdio first", servingStdio, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink, logger := newLogSink()
			warming, release := make(chan struct{}), make(chan struct{})
			opts := []fx.Option{
				fx.NopLogger,
				fx.Supply(server.Options{Authorizer: authz.AllowAll(), Logger: logger, Caller: &authz.Caller{Subject: "local"}}, newDeps("fx")),
				server.Tools(testRegistry()),
				thingsService(func(context.Context) error { close(warming); <-release; return nil }),
			}
			var (
				hs *server.HTTPServer
				sr *readCounter
				ct *mcp.IOTransport
			)
			var transport fx.Option
			if tt.stdio {
				var r io.ReadCloser
				var w io.WriteCloser
				r, w, ct = pipes()
				sr = &readCounter{ReadCloser: r}
				transport = server.Stdio(sr, w)
			} else {
				transport = fx.Options(server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}}), fx.Populate(&hs))
			}
			if tt.first {
				opts = append(opts, fx.Module("transports", transport), server.Module)
			} else {
				opts = append(opts, server.Module, transport)
			}
			app := fxtest.New(t, opts...)
			started := make(chan struct{})
			go func() { defer close(started); app.RequireStart() }()
			await.Recv(t, warming, "the warm-up's start")
			if strings.Contains(sink.String(), "serving MCP") {
				t.Errorf("a serving line while a service warms up:\n%s", sink)
			}
			if tt.stdio && sr.reads.Load() != 0 {
				t.Error("stdio read its input while a service warms up")
			}
			if !tt.stdio && hs.Addr() == "" {
				t.Error("the HTTP listener is not open while the services warm up")
			}
			close(release)
			await.Recv(t, started, "the app's start")
			if n := strings.Count(sink.String(), tt.serving); n != 1 {
				t.Errorf("%d lines %s once warm, want 1:\n%s", n, tt.serving, sink)
			}
			if !tt.stdio && !strings.Contains(sink.String(), `"url":"`+hs.URL()+`"`) {
				t.Errorf("the serving line does not hold the endpoint's url %s:\n%s", hs.URL(), sink)
			}
			if tt.stdio {
				// Serving indeed: a client is answered.
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
				if err != nil {
					t.Fatal(err)
				}
				cs.Close()
				await.Recv(t, app.Wait(), "the application's end")
			}
			app.RequireStop()
		})
	}
}

// TestFxFailedWarmUpServesNothing: a start whose warm-up fails logs no
// serving line, leaves no listener open, and reads nothing over stdio,
// though the transport's option is in a module before server.Module
// (whose invokes fx runs first). The HTTP listener closes at once, not
// after its DrainDelay (an hour here): a server that was never ready
// was sent nothing to drain.
func TestFxFailedWarmUpServesNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stdio bool
	}{
		{"http", false},
		{"stdio", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink, logger := newLogSink()
			var (
				hs        *server.HTTPServer
				sr        *readCounter
				transport fx.Option
			)
			if tt.stdio {
				r, w, _ := pipes()
				sr = &readCounter{ReadCloser: r}
				transport = server.Stdio(sr, w)
			} else {
				transport = fx.Options(server.HTTP("127.0.0.1:0", server.HTTPServerOptions{
					Endpoint:   server.HTTPOptions{Verifier: server.StaticTokens(testTokens)},
					DrainDelay: time.Hour,
				}), fx.Populate(&hs))
			}
			app := fx.New(
				fx.NopLogger,
				fx.Module("transports", transport),
				server.Module,
				fx.Supply(server.Options{Authorizer: authz.AllowAll(), Logger: logger, Caller: &authz.Caller{Subject: "local"}}, newDeps("fx")),
				server.Tools(testRegistry()),
				thingsService(func(context.Context) error { return errors.New("things is down") }),
			)
			startErr := make(chan error, 1)
			go func() { startErr <- app.Start(context.Background()) }()
			if err := await.Recv(t, startErr, "the failed start's return"); err == nil || !strings.Contains(err.Error(), "things is down") {
				t.Fatalf("Start = %v, want the warm-up's failure", err)
			}
			if strings.Contains(sink.String(), "serving MCP") {
				t.Errorf("a serving line after a failed warm-up:\n%s", sink)
			}
			if tt.stdio {
				if n := sr.reads.Load(); n != 0 {
					t.Errorf("stdio read its input %d times after a failed warm-up", n)
				}
				return
			}
			if hs.Addr() == "" {
				t.Fatal("the listener never opened: the test proves nothing")
			}
			if c, err := net.Dial("tcp", hs.Addr()); err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after the failed start", hs.Addr())
			}
		})
	}
}

// TestFxLogger: an app built with server.FxLogger logs none of fx's
// events (provided, invoking, OnStart hooks, started) at info level and
// logs them at debug; a failed start is logged at error level.
func TestFxLogger(t *testing.T) {
	app := func(level slog.Level, warm func(context.Context) error) (*fx.App, *logSink) {
		sink := &logSink{}
		logger := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: level}))
		return fx.New(
			server.FxLogger(logger),
			fx.Supply(server.Options{Authorizer: authz.AllowAll(), Logger: slog.New(slog.DiscardHandler)}, newDeps("fx")),
			server.Module,
			server.Tools(testRegistry()),
			thingsService(warm),
		), sink
	}
	run := func(a *fx.App) {
		t.Helper()
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	quiet, sink := app(slog.LevelInfo, nil)
	run(quiet)
	if sink.String() != "" {
		t.Errorf("fx's events at info level:\n%s", sink)
	}
	loud, sink := app(slog.LevelDebug, nil)
	run(loud)
	for _, msg := range []string{`"msg":"provided"`, `"msg":"invoking"`, `"msg":"OnStart hook executed"`, `"msg":"started"`} {
		if !strings.Contains(sink.String(), msg) {
			t.Errorf("no %s event at debug level:\n%s", msg, sink)
		}
	}
	if strings.Contains(sink.String(), `"level":"INFO"`) {
		t.Errorf("an fx event above debug level:\n%s", sink)
	}
	failing, sink := app(slog.LevelInfo, func(context.Context) error { return errors.New("things is down") })
	if err := failing.Start(context.Background()); err == nil {
		t.Fatal("the app started")
	}
	if !strings.Contains(sink.String(), `"level":"ERROR"`) || !strings.Contains(sink.String(), "things is down") {
		t.Errorf("the failed start is not logged at error level:\n%s", sink)
	}
}
