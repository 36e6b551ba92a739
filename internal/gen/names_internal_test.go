package gen

import "testing"

// TestNames: tool names in snake case, Go names with Go's initialisms,
// file names the go command neither drops nor reads as a constraint.
func TestNames(t *testing.T) {
	for _, tt := range []struct{ in, snake, exported string }{
		{"showPetById", "show_pet_by_id", "ShowPetByID"},
		{"getHTTPResponse", "get_http_response", "GetHTTPResponse"},
		{"list-data-sets", "list_data_sets", "ListDataSets"},
		{"get /pets/{petId}", "get_pets_pet_id", "GetPetsPetID"},
		{"X-Request-Id", "x_request_id", "XRequestID"},
		{"v2Items", "v2_items", "V2Items"},
		{"user_ids", "user_ids", "UserIDs"},
		{"2fa", "2fa", "X2fa"},
		{"__", "", "Fallback"},
		{"café au lait", "caf_au_lait", "CafAuLait"},
	} {
		if got := snake(tt.in); got != tt.snake {
			t.Errorf("snake(%q) = %q, want %q", tt.in, got, tt.snake)
		}
		if got := exported(tt.in, "Fallback"); got != tt.exported {
			t.Errorf("exported(%q) = %q, want %q", tt.in, got, tt.exported)
		}
	}
	for name, want := range map[string]string{
		"list_pets": "list_pets", "run_test": "run_test_tool", "get_linux": "get_linux_tool",
		"build_arm64": "build_arm64_tool", "routes": "routes_tool", "types": "types_tool", "test": "test_tool",
		"linux_box": "linux_box",
	} {
		if got := fileBase(name); got != want {
			t.Errorf("fileBase(%q) = %q, want %q", name, got, want)
		}
	}
}
