// Package listcursor writes and reads go-sdk's private tools/list cursor
// format. No go-sdk issue asks for it (none was found at v1.8.0): the SDK
// offers no public API to make or read a pagination cursor, while a
// list's nextCursor is the unique id (for tools, the name) of its page's
// last item, gob-encoded and then base64url-encoded (go-sdk mcp/server.go,
// encodeCursor).
//
// authz's visibility filter needs both directions: the SDK's nextCursor
// names the last tool of its unfiltered page, which may be a tool the
// caller cannot see; the filtered page then ends at its last visible tool
// instead, with a cursor of ours ([After]) that the SDK resumes from
// ([Names] tells whether the SDK's own cursor already names it).
//
// TestCanarySDKCursorFormat fails the day go-sdk changes its cursors:
// update this package then, or, if the SDK offers a way to make cursors
// by then, use it and delete this package.
package listcursor

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
)

// pageToken is go-sdk's pagination cursor before its encoding.
type pageToken struct{ LastUID string }

// After returns the cursor go-sdk resumes after the tool name.
func After(name string) (string, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(pageToken{LastUID: name}); err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(buf.Bytes()), nil
}

// Names reports whether cursor resumes after the tool name.
func Names(cursor, name string) bool {
	b, err := base64.URLEncoding.DecodeString(cursor)
	if err != nil {
		return false
	}
	var t pageToken
	return gob.NewDecoder(bytes.NewReader(b)).Decode(&t) == nil && t.LastUID == name
}
