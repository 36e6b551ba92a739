package permission

import (
	"bytes"
	"fmt"
	"os"
)

// minKeyLen is the least length, in bytes, of [Options].Key.
const minKeyLen = 32

// ReadKeyFile reads the key that signs request states ([Options].Key)
// from the file at path: the same file on every replica, so that a
// question asked on one can be answered on another. The key is the
// file's bytes less one trailing line ending ("\n" or "\r\n", as left by
// an editor, echo or a Kubernetes Secret written from a literal); it must
// hold at least 32 bytes. Make one with
//
//	head -c 32 /dev/urandom > state.key   # or: openssl rand -base64 48
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("permission: state key: %w", err)
	}
	if bytes.HasSuffix(data, []byte("\n")) {
		data = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	}
	if len(data) < minKeyLen {
		return nil, fmt.Errorf("permission: state key %s: %d bytes long, at least %d are needed (make one with: head -c 32 /dev/urandom > %s)", path, len(data), minKeyLen, path)
	}
	return data, nil
}
