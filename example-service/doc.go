// Command example-service is a catalog microservice's MCP front, built
// with toolroute: the first thing to run.
//
//	go run ./example-service
//
// serves MCP over streamable HTTP at http://127.0.0.1:8080/mcp, in front
// of a catalog API it runs in-process on a loopback port, with an embedded
// role policy (viewer: GET; editor: GET, POST, PUT; admin: everything) and
// three local-demo bearer tokens, demo-viewer, demo-editor and demo-admin,
// announced at start-up. Each caller sees the tools its role's routes
// allow: a viewer get_item, list_items, audit_catalog and whoami; an editor
// also create_item and update_item; an admin delete_item too.
//
// # Flags
//
//	-addr ADDR            HTTP listen address (default 127.0.0.1:8080)
//	-stdio                serve MCP over standard input and output instead
//	-caller ROLE          the stdio caller's role (default viewer)
//	-upstream URL         use the catalog API at URL instead of the embedded one
//	-policy FILE          role policies (JSON, the RBAC proxy's shape) replacing the embedded ones
//	-tokens FILE          bearer tokens (JSON) replacing the demo tokens
//	-proxy-auth URL       ask the RBAC proxy at URL instead of a policy
//	-anonymous ROLE       HTTP requests without a token act as ROLE (off by default)
//	-confirm-destructive  delete_item asks the user to confirm each deletion
//	-redis URL            share the replay guard, remembered answers, the rate limit and cancellations through Redis
//	-state-key-file FILE  the key signing permission questions, the same on every replica (with -redis)
//	-rate-limit N         at most N tool calls per second per caller (0 = off)
//	-drain-delay D        on SIGTERM, serve D more with /readyz answering 503 (default 0)
//	-shutdown-timeout D   then give in-flight calls D to finish (default 10s)
//	-metrics-addr ADDR    serve Prometheus metrics at http://ADDR/metrics (off by default)
//	-audit FILE           append audit records (JSON lines) to FILE ("-": standard error)
//
// Every flag can also be set from the environment: TOOLROUTE_ + the
// flag's name in upper snake case (-proxy-auth is TOOLROUTE_PROXY_AUTH).
// The command line wins; an empty variable counts as unset; a TOOLROUTE_
// variable naming no flag stops the start. (The routes subcommand reads
// its flags from the command line only.)
//
// Traces (and metrics) are exported as the standard OTEL_* environment
// variables say, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
// (see server/telemetry/otelsetup); nothing is exported without them.
//
// A tokens file is a JSON array:
//
//	[{"token": "s3cret", "subject": "alice", "roles": ["editor"]}]
//
// With -proxy-auth and no -tokens, the proxy judges every bearer token: one
// it does not know gets HTTP 401 before any tool runs; one it knows is
// forwarded to it for every decision (and to the catalog).
//
// # Subcommands
//
//	example-service routes
//
// prints the tool → route table as JSON (for the RBAC proxy's operators,
// and kept as a golden file for review).
//
//	example-service routes -format rego|cedar|casbin|istio|openapi [-policy FILE]
//
// prints the table and the role policy in the form that engine reads
// (authz/export; -claim and -namespace tune the Istio policies), and
//
//	example-service routes -matrix [-format text|json] [-policy FILE]
//
// which role sees which tool.
//
//	example-service routes -role viewer -behaviour read-only
//
// prints a role policy, in the proxy's shape, granting exactly the routes
// of the tools of those behaviours (comma-separated: read-only, additive,
// destructive).
//
//	example-service catalog -addr 0.0.0.0:8081
//
// serves the demo catalog API alone, in memory: the upstream that the
// replicas of the deployment kit (deploy/) share.
package main
