// Command example-service is a catalog microservice's MCP front, built
// with toolroute: the first thing to run, and the shape of what a team
// writes. It is its upstream's routes and types (package catalog, which
// also serves the demo API), its tool files (package tools: four of them
// handler-free, typed upstream calls) and a main on the service kit
// (package service), which
// gives it every production capability by flags and TOOLROUTE_*
// variables: see the kit's documentation and the README's "Service kit"
// section for them.
//
//	go run ./example-service
//
// serves MCP over streamable HTTP at http://127.0.0.1:8080/mcp, in front
// of a catalog API it runs in-process on a loopback port (the kit's
// embedded upstream), with an embedded role policy (viewer: GET; editor:
// GET, POST, PUT; admin: everything) and three local-demo bearer tokens,
// demo-viewer, demo-editor and demo-admin, announced at start-up. Each
// caller sees the tools its role's routes allow: a viewer get_item,
// list_items, audit_catalog and whoami; an editor also create_item and
// update_item; an admin delete_item too.
//
// Its own flag and subcommand, beside the kit's:
//
//	-confirm-destructive  delete_item asks the user to confirm each deletion (TOOLROUTE_CONFIRM_DESTRUCTIVE)
//
//	example-service catalog [-addr ADDR]
//
// serves the demo catalog API alone, in memory (default address
// 127.0.0.1:8081, also TOOLROUTE_ADDR): the upstream that the replicas of
// the deployment kit (deploy/) share, with -upstream http://catalog:8081.
package main
