package schemamsg

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// validatingArgs starts the SDK's text of an argument validation error.
const validatingArgs = `validating "arguments": `

var (
	// nullType is the validator's text for a null where a type is wanted.
	nullType = regexp.MustCompile(`^type: <invalid reflect\.Value> has type "null", want (?:"([^"]*)"|one of "([^"]*)")$`)
	// numberBound is its text for a number out of a numeric keyword's
	// bound: the value as a big.Rat ("7/1"), the bound as %f.
	numberBound = regexp.MustCompile(`^(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): (-?[0-9]+/[0-9]+) (is (?:less than|greater than|less than or equal to|greater than or equal to|not a multiple of)) (-?[0-9.]+|[-+]?Inf|NaN)$`)
)

// Plain rewrites one SDK validation text (see the package doc), and
// reports whether it did.
func Plain(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, validatingArgs)
	if !ok {
		return "", false
	}
	// Peel "validating PATH: " off; the last PATH is the failing schema.
	path := ""
	for {
		p, r, ok := strings.Cut(strings.TrimPrefix(rest, "validating "), ": ")
		if !strings.HasPrefix(rest, "validating ") || !ok {
			break
		}
		path, rest = p, r
	}
	var leaf string
	if m := nullType.FindStringSubmatch(rest); m != nil {
		want := m[1]
		if m[2] != "" {
			want = "one of " + m[2]
		}
		leaf = "null is not allowed (want " + want + ")"
	} else if m := numberBound.FindStringSubmatch(rest); m != nil {
		v, ok := new(big.Rat).SetString(m[2])
		if !ok {
			return "", false
		}
		bound, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return "", false
		}
		leaf = m[1] + ": " + ratText(v) + " " + m[3] + " " + floatText(bound)
	} else {
		return "", false
	}
	return validatingArgs + argumentName(path) + leaf, true
}

// argumentName turns a schema path ("/properties/inner/properties/level",
// "/properties/tags/items") into `argument "inner.level": ` or
// `argument "tags[]": `; the root, or a path it cannot read, into
// "arguments: ".
func argumentName(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch {
		case parts[i] == "properties" && i+1 < len(parts):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			// JSON Pointer escapes "/" and "~" in a name.
			b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i+1]))
			i++
		case parts[i] == "items" && b.Len() > 0:
			b.WriteString("[]")
		default:
			return "arguments: "
		}
	}
	if b.Len() == 0 {
		return "arguments: "
	}
	return "argument " + strconv.Quote(b.String()) + ": "
}

// ratText writes a number the way JSON would: an integer in full up to
// 15 digits, otherwise the shortest float ("1e+20", "0.5").
func ratText(r *big.Rat) string {
	f, _ := r.Float64()
	if r.IsInt() && math.Abs(f) < 1e15 {
		return r.Num().String()
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// floatText writes a schema bound: in full if it is an integer below
// 1e15, otherwise the shortest float.
func floatText(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
