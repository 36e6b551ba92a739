module example.com/petstore-mcp

go 1.26.0

require github.com/toolroute/toolroute v0.1.0
