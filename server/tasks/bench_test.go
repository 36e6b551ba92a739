package tasks_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/internal/testing/tasktest"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/tool"
)

type echoArgs struct {
	Text string `json:"text"`
}

// echoServer is a server of one local tool "echo" with task setting
// mode (after an hour, for TaskAllowed: never reached here), with the
// tasks installer when tk is set.
func echoServer(b *testing.B, mode tool.TaskMode, tk *tasks.Tasks) *mcp.Server {
	r := registry.New[struct{}]()
	t := tool.Tool[struct{}]{
		Name: "echo", Description: "Echo.", Local: true, Behaviour: behaviour.ReadOnly, Task: mode,
		Handler: tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in echoArgs) (echoArgs, error) {
			return in, nil
		}),
	}
	if mode == tool.TaskAllowed {
		t.TaskAfter = time.Hour
	}
	r.Register(t)
	installs := []server.Installer{server.Install(r, struct{}{})}
	if tk != nil {
		installs = append(installs, tk)
	}
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Logger: slog.New(slog.DiscardHandler)}, installs...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSyncCall compares, call by call (benchtools.Paired), a
// synchronous tools/call of a tool without a task setting on a server
// without tasks ("today") with one of a TaskAllowed tool on a server
// with them, whose call stays synchronous: for a client that does not
// declare the extension (the middleware only looks), and for one that
// does (the handler runs on a goroutine of its own, watched until
// TaskAfter).
func BenchmarkSyncCall(b *testing.B) {
	caller := &authz.Caller{Subject: "ada"}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	newTasks := func() *tasks.Tasks {
		tk, err := tasks.New(tasks.Options{Authorizer: authz.AllowAll()})
		if err != nil {
			b.Fatal(err)
		}
		return tk
	}
	today := servertest.Connect(b, echoServer(b, tool.TaskNever, nil), caller, servertest.Options{})
	capable := echoServer(b, tool.TaskAllowed, newTasks())
	b.Run("undeclared", func(b *testing.B) {
		other := servertest.Connect(b, capable, caller, servertest.Options{})
		benchtools.Paired(b, "call", "today", benchtools.TimedCall(b, today, params), "task-capable", benchtools.TimedCall(b, other, params))
	})
	b.Run("declared", func(b *testing.B) {
		caps := &mcp.ClientCapabilities{}
		caps.AddExtension(tasks.Extension, nil)
		c := mcp.NewClient(&mcp.Implementation{Name: "declaring", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		other := servertest.Connect(b, capable, caller, servertest.Options{Client: c})
		benchtools.Paired(b, "call", "today", benchtools.TimedCall(b, today, params), "task-capable", benchtools.TimedCall(b, other, params))
	})
}

// BenchmarkGet is one tasks/get of a completed task over stateless HTTP
// on loopback (the raw client of tasktest: one POST, the answer read),
// with the task in memory and in Redis.
func BenchmarkGet(b *testing.B) {
	stores := map[string]func(b *testing.B) tasks.Store{
		"memory": func(*testing.B) tasks.Store { return &tasks.Memory{} },
		"redis": func(b *testing.B) tasks.Store {
			return redisstore.NewTaskStore(redisClient(b, redistest.Start(b).Addr), redisstore.Options{})
		},
	}
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			tk, err := tasks.New(tasks.Options{Authorizer: authz.AllowAll(), Store: stores[name](b)})
			if err != nil {
				b.Fatal(err)
			}
			h, err := server.HTTPHandler(echoServer(b, tool.TaskAlways, tk), server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"tok": {Subject: "ada"}})})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(h)
			defer hs.Close()
			c := tasktest.Client{URL: hs.URL, Token: "tok", Declares: true}
			id := c.Create(b, "echo", map[string]any{"text": "hello"})
			c.Until(b, id, "completed", 10*time.Second)
			b.ReportAllocs()
			for b.Loop() {
				if _, rerr := c.Get(b, id); rerr != nil {
					b.Fatal(rerr)
				}
			}
		})
	}
}

type getParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type getResult struct {
	mcp.ResultBase
	Status string `json:"status"`
}

// BenchmarkGetInProcess is one tasks/get of a completed task in memory,
// from a go-sdk client over in-memory transports (CallCustomMethod): the
// server's work for it, without HTTP.
func BenchmarkGetInProcess(b *testing.B) {
	ids := make(chan string, 1)
	tk, err := tasks.New(tasks.Options{Authorizer: authz.AllowAll(), OnChange: func(_ context.Context, c tasks.Change) {
		if c.Status == tasks.Completed {
			ids <- c.TaskID
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(tasks.Extension, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "declaring", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	if err := mcp.AddSendingCustomMethod[*getParams, *getResult](c, "tasks/get"); err != nil {
		b.Fatal(err)
	}
	cs := servertest.Connect(b, echoServer(b, tool.TaskAlways, tk), &authz.Caller{Subject: "ada"}, servertest.Options{Client: c})
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}); err != nil {
		b.Fatal(err)
	}
	id := <-ids
	get := func() time.Duration {
		start := time.Now()
		res, err := mcp.CallCustomMethod[*getParams, *getResult](ctx, cs, "tasks/get", &getParams{TaskID: id})
		if err != nil || res.Status != "completed" {
			b.Fatalf("tasks/get = %+v, %v", res, err)
		}
		return time.Since(start)
	}
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			get()
		}
	})
	// paired with a synchronous tools/call of a tool without a task
	// setting, call by call, for scale.
	b.Run("paired", func(b *testing.B) {
		today := servertest.Connect(b, echoServer(b, tool.TaskNever, nil), &authz.Caller{Subject: "ada"}, servertest.Options{})
		params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
		benchtools.Paired(b, "op", "tools/call", benchtools.TimedCall(b, today, params), "tasks/get", get)
	})
}
