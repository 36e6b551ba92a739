package authz

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/rules"
)

// Toolsets returns the tags c's tools are limited to by the roles p
// defines (see [RolePolicy].Toolsets), sorted, and whether c is limited
// at all: it is when every role of c's that p defines lists toolsets
// (their union is the limit), and not when one of them lists none, or
// when p defines none of c's roles (such a caller reaches no route
// anyway). [Options].Toolsets (server.New's Options.Toolsets) calls it
// through a function of the request's context and the caller.
func (p *Policy) Toolsets(c Caller) (tags []string, limited bool) {
	for _, name := range c.Roles {
		role := p.roles[name]
		if role == nil {
			continue
		}
		if role.toolsets == nil {
			return nil, false
		}
		limited = true
		tags = append(tags, role.toolsets...)
	}
	if !limited {
		return nil, false
	}
	slices.Sort(tags)
	return slices.Compact(tags), true
}

// The two ways a client asks for a subset of the tools it may see, by
// tag, on any request: the _meta key (a list of tags; any transport) and
// the HTTP header (tags separated by commas, as GitHub's MCP server
// reads it). With both, a tool must carry a tag of each.
const (
	toolsetsMetaKey = "io.github.toolroute/toolsets"
	toolsetsHeader  = "X-MCP-Toolsets"
)

// toolsets is the toolset filter of one request: up to three limits
// (the caller's roles', the client's _meta, the client's header), each
// a sorted list of tags; a tool passes if it carries a tag of every
// limit. The zero value limits nothing.
type toolsets struct {
	limits [3][]string
	n      int
}

func (f *toolsets) add(tags []string) {
	f.limits[f.n] = tags
	f.n++
}

// hides reports whether f hides a tool of these tags (sorted).
func (f *toolsets) hides(tags []string) bool {
	for _, limit := range f.limits[:f.n] {
		if !intersects(limit, tags) {
			return true
		}
	}
	return false
}

// intersects reports whether the sorted lists a and b share an element.
func intersects(a, b []string) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			return true
		case c < 0:
			i++
		default:
			j++
		}
	}
	return false
}

// toolsetsOf returns the toolset filter of req by caller: the limit of
// the caller's roles (g.toolsets), and those the client asked for. A
// client's malformed request is a JSON-RPC error -32602 saying what is
// wrong.
func (g *guard) toolsetsOf(ctx context.Context, caller Caller, req mcp.Request) (toolsets, error) {
	var f toolsets
	if g.toolsets != nil {
		if tags, limited := g.toolsets(ctx, caller); limited {
			f.add(tags)
		}
	}
	var meta mcp.Meta
	switch r := req.(type) {
	case *mcp.ListToolsRequest:
		if r.Params != nil {
			meta = r.Params.Meta
		}
	case *mcp.CallToolRequest:
		if r.Params != nil {
			meta = r.Params.Meta
		}
	}
	if v, ok := meta[toolsetsMetaKey]; ok {
		tags, err := metaTags(v)
		if err != nil {
			return f, err
		}
		f.add(tags)
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if v := strings.Join(extra.Header.Values(http.CanonicalHeaderKey(toolsetsHeader)), ","); strings.TrimSpace(v) != "" {
			tags, err := checkTags(strings.Split(v, ","), "the "+toolsetsHeader+" header")
			if err != nil {
				return f, err
			}
			f.add(tags)
		}
	}
	return f, nil
}

// metaTags reads the _meta value of toolsetsMetaKey: a list of tags.
func metaTags(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, invalidToolsets(fmt.Sprintf("_meta %q must be a list of tags", toolsetsMetaKey))
	}
	tags := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, invalidToolsets(fmt.Sprintf("_meta %q must be a list of tags", toolsetsMetaKey))
		}
		tags[i] = s
	}
	return checkTags(tags, fmt.Sprintf("_meta %q", toolsetsMetaKey))
}

// checkTags returns tags trimmed, sorted and distinct, or the error
// naming where they came from and what is wrong.
func checkTags(tags []string, where string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if !rules.ValidTag(t) {
			return nil, invalidToolsets(fmt.Sprintf("%s: %s is not a tag (1 to 64 of a-z 0-9 _ . -, starting with a letter or digit)", where, quoteTag(t)))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, invalidToolsets(where + ": name at least one tag, or leave it out")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// quoteTag quotes a client's value for an error, bounded.
func quoteTag(t string) string {
	if len(t) > 64 {
		t = t[:64] + "…"
	}
	return fmt.Sprintf("%q", t)
}

func invalidToolsets(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid toolsets: " + msg}
}
