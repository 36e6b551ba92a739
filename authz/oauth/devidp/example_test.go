package devidp_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/oauth/devidp"
)

// A provider with a minting client issues a token for a subject and
// roles, which a service's verifier accepts.
func Example() {
	ctx := context.Background()
	const audience = "http://127.0.0.1:8080/mcp"
	p, err := devidp.Start("127.0.0.1:0", devidp.Options{Clients: []devidp.Client{
		{ID: "dev-client", Secret: "dev-secret", Audience: []string{audience}, Mint: true},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	token, err := p.Token(ctx, "dev-client", devidp.TokenOptions{Subject: "alice", Roles: []string{"editor"}})
	if err != nil {
		log.Fatal(err)
	}

	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: p.Issuer(), Audience: audience, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	caller, err := v.Verify(ctx, token, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(caller.Subject, caller.Roles, caller.Client)
	// Output: alice [editor] dev-client
}
