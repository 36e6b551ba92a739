package server_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// Greeter is an example service's dependency container.
type Greeter struct{ Greeting string }

type greetArgs struct {
	Name string `json:"name" jsonschema:"minLength=1"`
}

type greeting struct {
	Text string `json:"text"`
}

// greetings is an example registry; a service declares one and
// registers each tool in an init function of the tool's own file.
var greetings = func() *registry.Registry[*Greeter] {
	r := registry.New[*Greeter]()
	r.Register(tool.Tool[*Greeter]{
		Name:        "greet",
		Description: "Greet someone, on behalf of the caller.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, g *Greeter, _ *mcp.CallToolRequest, in greetArgs) (greeting, error) {
			c, _ := authz.CallerFromContext(ctx)
			return greeting{Text: fmt.Sprintf("%s, %s, from %s", g.Greeting, in.Name, c.Subject)}, nil
		}),
	})
	return r
}()

// New builds a server without fx; here a client connects in memory, as
// the configured local caller.
func ExampleNew() {
	s, err := server.New(server.Options{
		Authorizer: authz.AllowAll(),
		Caller:     &authz.Caller{Subject: "local-user"},
		Logger:     slog.New(slog.DiscardHandler),
	}, server.Install(greetings, &Greeter{Greeting: "Hello"}))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// {"text":"Hello, Ada, from local-user"}
}

// Module wires registries, services and transports into an fx
// application. Run it with app.Run(); here it starts and stops.
func ExampleModule() {
	app := fx.New(
		fx.NopLogger,
		server.Module,
		fx.Supply(
			server.Options{Authorizer: authz.AllowAll(), Logger: slog.New(slog.DiscardHandler)},
			&Greeter{Greeting: "Hello"},
		),
		server.Tools(greetings),
		// One Service per ServiceKey the tools use (greet is local: none
		// needed); Warm runs on start.
		server.ProvideService(func() server.Service {
			return server.Service{Key: "catalog", Warm: func(context.Context) error { return nil }}
		}),
		server.HTTP("127.0.0.1:0", server.HTTPServerOptions{Endpoint: server.HTTPOptions{
			Verifier: server.StaticTokens(map[string]authz.Caller{"demo-token": {Subject: "demo", Roles: []string{"viewer"}}}),
		}}),
	)
	if err := app.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("serving")
	if err := app.Stop(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// serving
}
