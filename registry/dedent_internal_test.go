package registry

import "testing"

func TestDedentKeepsRelativeIndentation(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{" \n\t \n", ""},
		{"One line.  ", "One line."},
		// The text starts on a line of its own: every line counts.
		{"\n\t\tA.\n\t\t  B.\n\t", "A.\n  B."},
		{"\n\t\tA.\n\n\t\t\tB.\n\t\tC.\n", "A.\n\n\tB.\nC."},
		// The text starts on the opening line: only the lines after it
		// count.
		{"A.\n\t\tB.\n\t\t  C.\n\t", "A.\nB.\n  C."},
		{"  A.\n    B.", "A.\nB."},
	}
	for _, tt := range tests {
		if got := dedent(tt.in); got != tt.want {
			t.Errorf("dedent(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
