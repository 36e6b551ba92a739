package statelesshttp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// versionsCall asks a server which protocol versions it serves: it
// names a version no server serves, which a session refuses, with the
// list it serves, before any middleware or handler sees the call (so
// that asking has no effect a service could observe: no log, no span).
const versionsCall = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"9999-12-31","io.modelcontextprotocol/clientCapabilities":{}}}}`

// legacyVersions returns the protocol versions before 2026-07-28 that s
// serves, as a set, or nil if s does not say (see [New]).
func legacyVersions(s *mcp.Server) map[string]bool {
	msg, err := jsonrpc.DecodeMessage([]byte(versionsCall))
	if err != nil {
		return nil
	}
	req := msg.(*jsonrpc.Request)
	rec := &recorder{header: http.Header{}}
	x := &exchange{w: rec, id: req.ID, incoming: make(chan jsonrpc.Message, 1), done: make(chan struct{}), closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), exchangeKey{}, x))
	defer cancel()
	ss, err := s.Connect(ctx, x, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{}})
	if err != nil {
		return nil
	}
	defer ss.Close()
	x.incoming <- req
	<-x.done // at once: the session answers before any middleware (TestNarrowedVersions)
	x.release()
	data, ok := bytes.CutPrefix(rec.body.Bytes(), []byte("event: message\ndata: "))
	if !ok {
		return nil
	}
	var answer struct {
		Error *struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &answer) != nil {
		return nil
	}
	if answer.Error == nil || answer.Error.Code != mcp.CodeUnsupportedProtocolVersion {
		return nil
	}
	var legacy map[string]bool
	for _, v := range answer.Error.Data.Supported {
		if strings.Compare(v, "2026-07-28") < 0 {
			if legacy == nil {
				legacy = map[string]bool{}
			}
			legacy[v] = true
		}
	}
	return legacy
}

// recorder is the response writer of [legacyVersions]'s call.
type recorder struct {
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *recorder) WriteHeader(int)             {}
