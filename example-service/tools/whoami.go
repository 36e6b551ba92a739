package tools

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:  "whoami",
		Title: "Who am I",
		Description: `
			Tell who this server takes you for: your subject and your roles.
			The roles decide which tools you see.`,
		Local:     true,
		Behaviour: behaviour.ReadOnly,
		Handler:   tool.Handle(whoami),
	})
}

type whoamiArgs struct{}

type identity struct {
	Subject string   `json:"subject" jsonschema:"description=who the caller is"`
	Roles   []string `json:"roles" jsonschema:"description=the caller's roles"`
}

func whoami(ctx context.Context, _ *Deps, _ *mcp.CallToolRequest, _ whoamiArgs) (identity, error) {
	c, ok := authz.CallerFromContext(ctx)
	if !ok {
		return identity{}, errors.New("no caller identity in this session")
	}
	roles := c.Roles
	if roles == nil {
		roles = []string{}
	}
	return identity{Subject: c.Subject, Roles: roles}, nil
}
