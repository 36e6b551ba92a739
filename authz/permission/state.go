package permission

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The request state a question carries is
//
//	v1.BASE64URL(nonce[16] | expiry[8, Unix ms, big-endian] | asked mask).BASE64URL(HMAC-SHA256)
//
// The MAC covers a domain string, the principal, the tool, a digest of the
// canonical arguments, a digest of the [Request], the input key and the
// payload, each length-prefixed. Only the payload travels: everything
// else is recomputed from the retried call, so a state is good for
// exactly the invocation that received it.
const (
	stateVersion = "v1"
	stateDomain  = "toolroute/authz/permission state v1"
	nonceLen     = 16
	maxStateLen  = 4096
)

// binding is what a state is bound to besides its payload.
type binding struct {
	principal string
	tool      string
	args      [sha256.Size]byte
	request   [sha256.Size]byte
}

// payload is the part of a state that travels.
type payload struct {
	nonce  [nonceLen]byte
	expiry int64 // Unix milliseconds
	asked  []byte
}

func (p *payload) encode() []byte {
	b := make([]byte, 0, nonceLen+8+len(p.asked))
	b = append(b, p.nonce[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.expiry))
	return append(b, p.asked...)
}

func (c *Checker) mac(b *binding, raw []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	field := func(v []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(v)))
		m.Write(n[:])
		m.Write(v)
	}
	field([]byte(stateDomain))
	field([]byte(b.principal))
	field([]byte(b.tool))
	field(b.args[:])
	field(b.request[:])
	field([]byte(InputKey))
	field(raw)
	return m.Sum(nil)
}

// seal returns the request state for p, bound to b.
func (c *Checker) seal(b *binding, p *payload) string {
	raw := p.encode()
	enc := base64.RawURLEncoding
	return stateVersion + "." + enc.EncodeToString(raw) + "." + enc.EncodeToString(c.mac(b, raw))
}

// open verifies a request state against b and returns its payload. Every
// failure is a -32602 error; the MAC is compared in constant time before
// anything in the payload is trusted.
func (c *Checker) open(b *binding, state string) (*payload, error) {
	if len(state) > maxStateLen {
		return nil, invalidState("malformed")
	}
	version, rest, ok1 := strings.Cut(state, ".")
	data, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || version != stateVersion {
		return nil, invalidState("malformed")
	}
	enc := base64.RawURLEncoding
	raw, err1 := enc.DecodeString(data)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || len(raw) < nonceLen+8 {
		return nil, invalidState("malformed")
	}
	if !hmac.Equal(mac, c.mac(b, raw)) {
		return nil, invalidState("not issued for this call")
	}
	p := &payload{
		expiry: int64(binary.BigEndian.Uint64(raw[nonceLen:])),
		asked:  raw[nonceLen+8:],
	}
	copy(p.nonce[:], raw)
	return p, nil
}

// invalidState is the protocol error for a request state that cannot be
// used. It never leads to a new question.
func invalidState(why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "permission: invalid requestState: " + why}
}

// invalidAnswer is the protocol error for an answer that does not fit
// the question.
func invalidAnswer(why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "permission: invalid input response: " + why}
}

// argsDigest hashes the call's arguments in a canonical form (object keys
// sorted, no insignificant space, numbers kept as written), so that a
// client re-encoding the same arguments on retry still matches.
func argsDigest(raw json.RawMessage) [sha256.Size]byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil && !d.More() {
		if canon, err := json.Marshal(v); err == nil {
			return sha256.Sum256(canon)
		}
	}
	// Unparsable (arguments are validated first, so this is rare):
	// the exact bytes must match.
	return sha256.Sum256(raw)
}

// requestDigest hashes what the question is about.
func requestDigest(subjects, capabilities []string, noRemember bool) [sha256.Size]byte {
	h := sha256.New()
	list := func(h hash.Hash, vs []string) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(vs)))
		h.Write(n[:])
		for _, v := range vs {
			binary.BigEndian.PutUint32(n[:], uint32(len(v)))
			h.Write(n[:])
			h.Write([]byte(v))
		}
	}
	list(h, subjects)
	list(h, capabilities)
	if noRemember {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}
