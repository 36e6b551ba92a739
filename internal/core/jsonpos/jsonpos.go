// Package jsonpos places a JSON decoding error in its input: the line
// and column the configuration files' errors name (policies, tokens
// files).
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Err adds the line and column to a JSON syntax or type error of data;
// any other error is returned as it is. Its text quotes at most one
// character of the input, never a value.
func Err(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	// The offset is just past the offending byte.
	at := max(off-1, 0)
	line := 1 + bytes.Count(data[:at], []byte("\n"))
	col := int(at) - bytes.LastIndexByte(data[:at], '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
