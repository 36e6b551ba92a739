package schemavalue

import (
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// withVariant returns text for variant 0 and text followed by the
// variant's number for the others.
func withVariant(text string, variant int) string {
	if variant == 0 {
		return text
	}
	return text + strconv.Itoa(variant)
}

// str makes a string: a value of its format if it has one this package
// knows, else one its pattern generates, else [Text]; then fitted to
// minLength and maxLength, and checked against the pattern.
func (g *generator) str(s *jsonschema.Schema, variant int) (string, error) {
	minLen, maxLen := 0, -1
	if s.MinLength != nil {
		minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		maxLen = *s.MaxLength
	}
	if maxLen >= 0 && minLen > maxLen {
		return "", fmt.Errorf("minLength %d is more than maxLength %d", minLen, maxLen)
	}
	var re *regexp.Regexp
	if s.Pattern != "" {
		var err error
		if re, err = compile(s.Pattern); err != nil {
			return "", fmt.Errorf("pattern %q: %v", s.Pattern, err)
		}
	}
	fits := func(v string) bool {
		n := utf8.RuneCountInString(v)
		return n >= minLen && (maxLen < 0 || n <= maxLen) && (re == nil || re.MatchString(v))
	}
	if v, ok := formatValue(s.Format, variant); ok && fits(v) {
		return v, nil
	}
	if re != nil {
		// More repetitions, then padding (an unanchored pattern matches
		// inside a longer text), until the length fits.
		for _, padding := range []bool{false, true} {
			for rep := 0; rep <= max(minLen, 8); rep++ {
				v, ok := fromPattern(s.Pattern, rep, variant)
				if !ok {
					break
				}
				if pad := minLen - utf8.RuneCountInString(v); padding && pad > 0 {
					v += strings.Repeat("x", pad)
				}
				if fits(v) {
					return v, nil
				}
			}
		}
		return "", fmt.Errorf("no string this package can make matches pattern %q within lengths [%d, %d]", s.Pattern, minLen, maxLen)
	}
	v := withVariant(Text, variant)
	if n := utf8.RuneCountInString(v); n < minLen {
		v += strings.Repeat("x", minLen-n)
	} else if maxLen >= 0 && n > maxLen {
		v = string([]rune(v)[:maxLen])
	}
	if !fits(v) {
		return "", fmt.Errorf("no string fits format %q within lengths [%d, %d]", s.Format, minLen, maxLen)
	}
	return v, nil
}

// formatValue returns the variant-th value of a format this package
// knows.
func formatValue(format string, variant int) (string, bool) {
	v := variant
	suffix := ""
	if v > 0 {
		suffix = strconv.Itoa(v)
	}
	switch format {
	case "date-time":
		return fmt.Sprintf("2024-05-06T07:08:%02dZ", 9+v%50), true
	case "date":
		return fmt.Sprintf("2024-05-%02d", 6+v%20), true
	case "time":
		return fmt.Sprintf("07:08:%02dZ", 9+v%50), true
	case "duration":
		return fmt.Sprintf("P%dD", 1+v), true
	case "email", "idn-email":
		return "someone" + suffix + "@example.com", true
	case "hostname", "idn-hostname":
		if v == 0 {
			return "example.com", true
		}
		return "h" + suffix + ".example.com", true
	case "ipv4":
		return fmt.Sprintf("192.0.2.%d", 7+v%200), true
	case "ipv6":
		return fmt.Sprintf("2001:db8::%x", 7+v), true
	case "uri", "url", "iri":
		return "https://example.com/a%20b" + suffix, true
	case "uri-reference", "iri-reference":
		return "/a%20b" + suffix, true
	case "uri-template":
		return "https://example.com/{id}" + suffix, true
	case "uuid":
		return fmt.Sprintf("123e4567-e89b-42d3-a456-%012x", 0x426614174000+v), true
	case "json-pointer":
		return "/a/b" + suffix, true
	case "relative-json-pointer":
		return "0/a" + suffix, true
	case "regex":
		return "^x+" + suffix + "$", true
	case "byte":
		return base64.StdEncoding.EncodeToString([]byte(withVariant(Text, v))), true
	case "int32", "int64":
		return strconv.Itoa(7 + v), true
	case "double", "float", "decimal":
		return strconv.FormatFloat(1.5+float64(v), 'f', -1, 64), true
	case "password":
		return "secret" + suffix, true
	}
	return "", false
}

var patterns sync.Map // pattern → *regexp.Regexp or error

// compile compiles a pattern once.
func compile(pattern string) (*regexp.Regexp, error) {
	if v, ok := patterns.Load(pattern); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		patterns.Store(pattern, err)
		return nil, err
	}
	patterns.Store(pattern, re)
	return re, nil
}

// fromPattern walks the parsed pattern and writes a string it matches:
// each unbounded repetition repeated rep times (at least its minimum),
// the variant-th alternative of each alternation, and a character of
// each class (a letter or digit where the class has one). ok is false
// for a pattern regexp/syntax cannot parse or that matches nothing.
func fromPattern(pattern string, rep, variant int) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !walk(re, rep, variant, &b) {
		return "", false
	}
	return b.String(), true
}

func walk(re *syntax.Regexp, rep, variant int, b *strings.Builder) bool {
	times := func(lo, hi int) int {
		n := max(rep, lo)
		if hi >= 0 && n > hi {
			n = hi
		}
		return n
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		r, ok := pickRune(re.Rune, variant)
		if !ok {
			return false
		}
		b.WriteRune(r)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteRune('a' + rune(variant%26))
	case syntax.OpCapture:
		return walk(re.Sub[0], rep, variant, b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		for range times(lo, hi) {
			if !walk(re.Sub[0], rep, variant, b) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !walk(sub, rep, variant, b) {
				return false
			}
		}
	case syntax.OpAlternate:
		return walk(re.Sub[variant%len(re.Sub)], rep, variant, b)
	}
	// OpEmptyMatch and the assertions (^, $, \b, ...) write nothing.
	return true
}

// pickRune picks a character of a class given as ranges (lo, hi pairs):
// the variant-th lower-case letter, digit or upper-case letter if the
// class has it, else its first printable character.
func pickRune(ranges []rune, variant int) (rune, bool) {
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range []rune{'a' + rune(variant%26), 'a', '0' + rune(variant%10), '0', 'A' + rune(variant%26), 'A'} {
		if in(r) {
			return r, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := max(ranges[i], '!'); r <= ranges[i+1] && r < ranges[i]+256; r++ {
			if unicode.IsPrint(r) {
				return r, true
			}
		}
	}
	if len(ranges) >= 2 {
		return ranges[0], true
	}
	return 0, false
}

// number makes a number (an integer if integer) within s's bounds, a
// multiple of multipleOf if it asks: the variant-th step (1, or
// multipleOf) up from 1 for an integer, 1.5 for a number and multipleOf
// for a multiple, each first moved within the bounds; never 0 unless the
// bounds allow nothing else.
func (g *generator) number(s *jsonschema.Schema, integer bool, variant int) (float64, error) {
	step := 1.0
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		step = *s.MultipleOf
	}
	start := 1.0
	if s.MultipleOf != nil {
		start = step
	} else if !integer {
		start = 1.5
	}
	low, high := math.Inf(-1), math.Inf(1)
	lowExcl, highExcl := false, false
	if s.Minimum != nil {
		low = *s.Minimum
	}
	if s.ExclusiveMinimum != nil && *s.ExclusiveMinimum >= low {
		low, lowExcl = *s.ExclusiveMinimum, true
	}
	if s.Maximum != nil {
		high = *s.Maximum
	}
	if s.ExclusiveMaximum != nil && *s.ExclusiveMaximum <= high {
		high, highExcl = *s.ExclusiveMaximum, true
	}
	// The smallest and largest admissible values on the grid (integers,
	// or multiples of multipleOf).
	grid := integer || s.MultipleOf != nil
	if integer && step != math.Trunc(step) {
		step = math.Ceil(step) // a crude common grid; the check catches the rest
	}
	first, last := low, high
	if grid {
		if !math.IsInf(low, 0) {
			first = math.Ceil(low/step) * step
			if lowExcl && first == low {
				first += step
			}
		}
		if !math.IsInf(high, 0) {
			last = math.Floor(high/step) * step
			if highExcl && last == high {
				last -= step
			}
		}
	} else {
		if lowExcl {
			if math.IsInf(high, 0) {
				first = low + 0.5
			} else {
				first = low + (high-low)/4
			}
		}
		if highExcl {
			if math.IsInf(low, 0) {
				last = high - 0.5
			} else {
				last = high - (high-low)/4
			}
		}
	}
	if first > last {
		return 0, fmt.Errorf("no %s lies within the bounds (%v, %v)", map[bool]string{true: "integer", false: "number"}[integer], low, high)
	}
	start = min(max(start, first), last)
	v := start + float64(variant)*step
	if v > last {
		v = start - float64(variant)*step
		if v < first {
			v = start
		}
	}
	if v == 0 {
		switch {
		case step <= last:
			v = step
		case -step >= first:
			v = -step
		}
	}
	return v, nil
}
