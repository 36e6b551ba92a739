package jsonpos_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolroute/toolroute/internal/core/jsonpos"
)

func TestErr(t *testing.T) {
	for _, tt := range []struct {
		data string
		v    any
		want string
	}{
		{"[\n  {\"a\": 1},\n  {\"a\": x}\n]", &[]map[string]int{}, "line 3, column 9: invalid character 'x' looking for beginning of value"},
		{"{\"a\": \"s\"}", &struct{ A int }{}, "line 1, column 9: json: cannot unmarshal string into Go struct field .A of type int"},
	} {
		err := json.Unmarshal([]byte(tt.data), tt.v)
		if got := jsonpos.Err([]byte(tt.data), err); got == nil || got.Error() != tt.want || !errors.Is(got, err) {
			t.Errorf("Err(%q) = %v, want %q wrapping %v", tt.data, got, tt.want, err)
		}
	}
	other := errors.New("not JSON's")
	if got := jsonpos.Err([]byte("{}"), other); got != other {
		t.Errorf("Err of another error = %v, want it unchanged", got)
	}
}
