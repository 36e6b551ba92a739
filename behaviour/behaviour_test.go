package behaviour_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
)

func TestString(t *testing.T) {
	tests := []struct {
		b    behaviour.Behaviour
		want string
	}{
		{behaviour.Unset, "unset"},
		{behaviour.ReadOnly, "read-only"},
		{behaviour.Additive, "additive"},
		{behaviour.Destructive, "destructive"},
		{behaviour.Behaviour(4), "Behaviour(4)"},
		{behaviour.Behaviour(-1), "Behaviour(-1)"},
		{behaviour.Behaviour(1 << 40), fmt.Sprintf("Behaviour(%d)", 1<<40)},
	}
	for _, tt := range tests {
		if got := tt.b.String(); got != tt.want {
			t.Errorf("Behaviour(%d).String() = %q, want %q", int(tt.b), got, tt.want)
		}
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		b    behaviour.Behaviour
		want bool
	}{
		{behaviour.Unset, false},
		{behaviour.ReadOnly, true},
		{behaviour.Additive, true},
		{behaviour.Destructive, true},
		{behaviour.Behaviour(4), false},
		{behaviour.Behaviour(-1), false},
	}
	for _, tt := range tests {
		if got := tt.b.Valid(); got != tt.want {
			t.Errorf("%v.Valid() = %v, want %v", tt.b, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    behaviour.Behaviour
		wantErr bool
	}{
		{"read-only", behaviour.ReadOnly, false},
		{"additive", behaviour.Additive, false},
		{"destructive", behaviour.Destructive, false},
		{"unset", behaviour.Unset, true},
		{"", behaviour.Unset, true},
		{"Read-Only", behaviour.Unset, true},
		{"readonly", behaviour.Unset, true},
		{"read_only", behaviour.Unset, true},
		{" additive", behaviour.Unset, true},
		{"additive ", behaviour.Unset, true},
		{"DESTRUCTIVE", behaviour.Unset, true},
		{"Behaviour(4)", behaviour.Unset, true},
		{"1", behaviour.Unset, true},
	}
	for _, tt := range tests {
		got, err := behaviour.Parse(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("Parse(%q) error = %v, want error: %v", tt.in, err, tt.wantErr)
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "behaviour: ") {
			t.Errorf("Parse(%q) error %q lacks the package prefix", tt.in, err)
		}
	}
}

// TestParseString checks that Parse inverts String for every valid
// behaviour.
func TestParseString(t *testing.T) {
	for _, b := range []behaviour.Behaviour{behaviour.ReadOnly, behaviour.Additive, behaviour.Destructive} {
		got, err := behaviour.Parse(b.String())
		if err != nil || got != b {
			t.Errorf("Parse(%q) = %v, %v; want %v, nil", b.String(), got, err, b)
		}
	}
}

func TestMarshalText(t *testing.T) {
	tests := []struct {
		b       behaviour.Behaviour
		want    string
		wantErr bool
	}{
		{behaviour.ReadOnly, "read-only", false},
		{behaviour.Additive, "additive", false},
		{behaviour.Destructive, "destructive", false},
		{behaviour.Unset, "", true},
		{behaviour.Behaviour(7), "", true},
	}
	for _, tt := range tests {
		got, err := tt.b.MarshalText()
		if (err != nil) != tt.wantErr {
			t.Errorf("%v.MarshalText() error = %v, want error: %v", tt.b, err, tt.wantErr)
		}
		if string(got) != tt.want {
			t.Errorf("%v.MarshalText() = %q, want %q", tt.b, got, tt.want)
		}
	}
}

func TestUnmarshalText(t *testing.T) {
	tests := []struct {
		in      string
		want    behaviour.Behaviour
		wantErr bool
	}{
		{"read-only", behaviour.ReadOnly, false},
		{"additive", behaviour.Additive, false},
		{"destructive", behaviour.Destructive, false},
		{"unset", behaviour.Additive, true},
		{"", behaviour.Additive, true},
		{"bogus", behaviour.Additive, true},
	}
	for _, tt := range tests {
		b := behaviour.Additive // a failed unmarshal leaves the value alone
		err := b.UnmarshalText([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("UnmarshalText(%q) error = %v, want error: %v", tt.in, err, tt.wantErr)
		}
		if b != tt.want {
			t.Errorf("UnmarshalText(%q) gave %v, want %v", tt.in, b, tt.want)
		}
	}
}

func TestJSON(t *testing.T) {
	type row struct {
		B behaviour.Behaviour `json:"behaviour"`
	}
	for _, b := range []behaviour.Behaviour{behaviour.ReadOnly, behaviour.Additive, behaviour.Destructive} {
		data, err := json.Marshal(row{b})
		if err != nil {
			t.Fatalf("Marshal(%v): %v", b, err)
		}
		if want := `{"behaviour":"` + b.String() + `"}`; string(data) != want {
			t.Errorf("Marshal(%v) = %s, want %s", b, data, want)
		}
		var got row
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if got.B != b {
			t.Errorf("round trip of %v gave %v", b, got.B)
		}
	}

	// Invalid behaviours neither marshal nor unmarshal.
	if data, err := json.Marshal(row{behaviour.Unset}); err == nil {
		t.Errorf("Marshal(Unset) = %s, want an error", data)
	}
	for _, in := range []string{`{"behaviour":"unset"}`, `{"behaviour":"nope"}`, `{"behaviour":1}`, `{"behaviour":""}`} {
		var got row
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, got.B)
		}
	}
	// A map keyed by behaviour uses the text form too.
	data, err := json.Marshal(map[behaviour.Behaviour]int{behaviour.Destructive: 2, behaviour.ReadOnly: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"destructive":2,"read-only":1}`; string(data) != want {
		t.Errorf("Marshal(map) = %s, want %s", data, want)
	}
}

func TestAnnotations(t *testing.T) {
	type hints struct {
		ReadOnly, Destructive, Idempotent, OpenWorld bool
	}
	tests := []struct {
		b          behaviour.Behaviour
		idempotent bool
		openWorld  bool
		want       hints
	}{
		{behaviour.ReadOnly, false, false, hints{true, false, true, false}},
		{behaviour.ReadOnly, false, true, hints{true, false, true, true}},
		{behaviour.ReadOnly, true, false, hints{true, false, true, false}},
		{behaviour.ReadOnly, true, true, hints{true, false, true, true}},
		{behaviour.Additive, false, false, hints{false, false, false, false}},
		{behaviour.Additive, false, true, hints{false, false, false, true}},
		{behaviour.Additive, true, false, hints{false, false, true, false}},
		{behaviour.Additive, true, true, hints{false, false, true, true}},
		{behaviour.Destructive, false, false, hints{false, true, false, false}},
		{behaviour.Destructive, false, true, hints{false, true, false, true}},
		{behaviour.Destructive, true, false, hints{false, true, true, false}},
		{behaviour.Destructive, true, true, hints{false, true, true, true}},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%v/idempotent=%v/openWorld=%v", tt.b, tt.idempotent, tt.openWorld)
		t.Run(name, func(t *testing.T) {
			a := tt.b.Annotations("Some Title", tt.idempotent, tt.openWorld)
			if a.DestructiveHint == nil || a.OpenWorldHint == nil {
				t.Fatalf("DestructiveHint = %v, OpenWorldHint = %v; want both set", a.DestructiveHint, a.OpenWorldHint)
			}
			got := hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hints mismatch (-want +got):\n%s", diff)
			}
			if a.Title != "Some Title" {
				t.Errorf("Title = %q, want %q", a.Title, "Some Title")
			}
			// The wire form carries every hint explicitly.
			data, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			var wire map[string]any
			if err := json.Unmarshal(data, &wire); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"destructiveHint", "openWorldHint"} {
				if _, ok := wire[k]; !ok {
					t.Errorf("wire form %s lacks %s", data, k)
				}
			}
		})
	}
}

// TestAnnotationsFresh checks that each call returns its own hints: the
// registry hands them out, and one tool's must not alias another's.
func TestAnnotationsFresh(t *testing.T) {
	a := behaviour.ReadOnly.Annotations("", false, false)
	b := behaviour.ReadOnly.Annotations("", false, false)
	if a == b || a.DestructiveHint == b.DestructiveHint || a.OpenWorldHint == b.OpenWorldHint {
		t.Fatal("Annotations returned shared pointers")
	}
	*a.DestructiveHint = true
	if *b.DestructiveHint {
		t.Fatal("mutating one result changed another")
	}
	if c := behaviour.ReadOnly.Annotations("", false, false); *c.DestructiveHint {
		t.Fatal("mutating a result changed later results")
	}
}

func TestAnnotationsPanicsOnInvalid(t *testing.T) {
	for _, b := range []behaviour.Behaviour{behaviour.Unset, behaviour.Behaviour(4), behaviour.Behaviour(-3)} {
		t.Run(b.String(), func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil {
					t.Fatal("Annotations did not panic")
				}
				msg := fmt.Sprint(p)
				if !strings.HasPrefix(msg, "behaviour: ") || !strings.Contains(msg, b.String()) {
					t.Errorf("panic message %q: want the package prefix and %q", msg, b.String())
				}
			}()
			var a *mcp.ToolAnnotations = b.Annotations("", true, true)
			t.Errorf("Annotations returned %+v", a)
		})
	}
}
