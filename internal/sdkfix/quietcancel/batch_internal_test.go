package quietcancel

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
)

// chunkReader yields its chunks one Read at a time.
type chunkReader struct{ chunks []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

func TestBatchSpotter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   bool
	}{
		{"single messages", []string{`{"id":1,"params":["[x"]}` + "\n", `{"a":"[1]"}` + "\n"}, false},
		{"a batch", []string{`{"id":1}` + "\n", `[{"id":2}]` + "\n"}, true},
		{"a batch after blank lines and spaces", []string{"\n\r\n  \t", `[{"id":2}]`}, true},
		{"a line split across reads", []string{`{"id":1,`, `"x":[1]}` + "\n" + ` `, `{"id":2}`}, false},
		{"a batch split at its start", []string{`{"id":1}` + "\n  ", "", `[`, `{}]`}, true},
		{"brackets inside a line", []string{`{"id":1}`, `[`, "\n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var batches atomic.Bool
			b := &batchSpotter{ReadCloser: &chunkReader{chunks: append([]string(nil), tt.chunks...)}, batches: &batches}
			data, err := io.ReadAll(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != strings.Join(tt.chunks, "") {
				t.Errorf("read %q, want the input unchanged", data)
			}
			if got := batches.Load(); got != tt.want {
				t.Errorf("batch spotted = %v, want %v", got, tt.want)
			}
		})
	}
}
