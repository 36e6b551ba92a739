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

// discoverCall asks a server which protocol versions it serves. A server
// that does not serve 2026-07-28 refuses it with the list it serves.
const discoverCall = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// legacyVersions returns the protocol versions before 2026-07-28 that s
// serves, as a set, or nil if s does not say (see [New]).
func legacyVersions(s *mcp.Server) map[string]bool {
	msg, err := jsonrpc.DecodeMessage([]byte(discoverCall))
	if err != nil {
		return nil
	}
	req := msg.(*jsonrpc.Request)
	rec := &recorder{header: http.Header{}}
	x := &exchange{w: rec, id: req.ID, version: "2026-07-28", incoming: make(chan jsonrpc.Message, 1), done: make(chan struct{}), closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), exchangeKey{}, x))
	defer cancel()
	ss, err := s.Connect(ctx, x, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{}})
	if err != nil {
		return nil
	}
	defer ss.Close()
	x.incoming <- req
	<-x.done
	x.release()
	data, ok := bytes.CutPrefix(rec.body.Bytes(), []byte("event: message\ndata: "))
	if !ok {
		return nil
	}
	var answer struct {
		Result *struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
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
	var versions []string
	switch {
	case answer.Result != nil:
		versions = answer.Result.SupportedVersions
	case answer.Error != nil && answer.Error.Code == mcp.CodeUnsupportedProtocolVersion:
		versions = answer.Error.Data.Supported
	}
	var legacy map[string]bool
	for _, v := range versions {
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
