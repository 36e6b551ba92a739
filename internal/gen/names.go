package gen

import (
	"strconv"
	"strings"
	"unicode"
)

// words splits s into its words: at every character that is not an ASCII
// letter or digit, between a lower-case letter or digit and an upper-case
// one ("showPetById": show, Pet, By, Id), and before the last capital of
// a run followed by a lower-case letter ("HTTPServer": HTTP, Server).
// Non-ASCII letters separate words: tool names and Go identifiers here are
// ASCII.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !isASCIIAlnum(r) {
			flush()
			continue
		}
		if len(cur) > 0 && isUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && isLower(rs[i+1])
			if isLower(prev) || isDigit(prev) || (isUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

func isASCIIAlnum(r rune) bool { return isLower(r) || isUpper(r) || isDigit(r) }
func isLower(r rune) bool      { return 'a' <= r && r <= 'z' }
func isUpper(r rune) bool      { return 'A' <= r && r <= 'Z' }
func isDigit(r rune) bool      { return '0' <= r && r <= '9' }

// snake is s in lower snake case: "showPetById" is "show_pet_by_id",
// "GET /pets/{petId}" is "get_pets_pet_id". It is "" if s holds no ASCII
// letter or digit.
func snake(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, "_")
}

// initialisms are the words Go writes in one case (golint's list).
var initialisms = map[string]bool{
	"acl": true, "api": true, "ascii": true, "cpu": true, "css": true, "dns": true, "eof": true,
	"guid": true, "html": true, "http": true, "https": true, "id": true, "ip": true, "json": true,
	"lhs": true, "qps": true, "ram": true, "rhs": true, "rpc": true, "sla": true, "smtp": true,
	"sql": true, "ssh": true, "tcp": true, "tls": true, "ttl": true, "udp": true, "ui": true,
	"uid": true, "uuid": true, "uri": true, "url": true, "utf8": true, "vm": true, "xml": true,
	"xmpp": true, "xsrf": true, "xss": true,
}

// exported is s as an exported Go identifier: "pet_id" is "PetID",
// "x-request-id" is "XRequestID". A name that would start with a digit
// gets an "X" in front ("2fa" is "X2fa"); one with no ASCII letter or
// digit is fallback.
func exported(s, fallback string) string {
	var b strings.Builder
	for _, w := range words(s) {
		lw := strings.ToLower(w)
		if initialisms[lw] {
			b.WriteString(strings.ToUpper(lw))
			continue
		}
		if base, ok := strings.CutSuffix(lw, "s"); ok && initialisms[base] {
			b.WriteString(strings.ToUpper(base) + "s") // IDs, URLs
			continue
		}
		b.WriteString(strings.ToUpper(lw[:1]))
		b.WriteString(lw[1:])
	}
	id := b.String()
	switch {
	case id == "":
		return fallback
	case isDigit(rune(id[0])):
		return "X" + id
	}
	return id
}

// isIdent reports whether s is an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*),
// as a route placeholder's name must be.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || isLower(r) || isUpper(r) || i > 0 && isDigit(r)) {
			return false
		}
	}
	return true
}

// namespace hands out distinct names: the first asker of a name gets it,
// later ones get it with "2", "3", ... appended (after sep).
type namespace struct {
	taken map[string]bool
	sep   string
}

func newNamespace(sep string, reserved ...string) *namespace {
	ns := &namespace{taken: map[string]bool{}, sep: sep}
	for _, r := range reserved {
		ns.taken[r] = true
	}
	return ns
}

// claim returns name, or name with the first free number appended.
func (ns *namespace) claim(name string) string {
	if !ns.taken[name] {
		ns.taken[name] = true
		return name
	}
	for i := 2; ; i++ {
		n := name + ns.sep + strconv.Itoa(i)
		if !ns.taken[n] {
			ns.taken[n] = true
			return n
		}
	}
}

// validJSONName reports whether encoding/json can use name as a struct
// tag's name (its isValidTag: otherwise it would name the field by its
// Go name), and the schema reflector too ("-" it reads as "leave the
// field out", even written "-,").
func validJSONName(name string) bool {
	if name == "" || name == "-" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// buildSuffixes are the last words of a file name that the go command
// reads as a build constraint ("_test", "_linux", "_amd64"): a generated
// file must not end in one, or it would drop out of the build.
var buildSuffixes = map[string]bool{
	"test": true,
	// GOOS values (go tool dist list)
	"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
	"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true,
	"openbsd": true, "plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true,
	// GOARCH values
	"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true,
	"arm64be": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true,
	"mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true, "ppc64le": true,
	"riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true, "sparc64": true,
	"wasm": true,
}

// reservedFiles are the file names of the tools package that are not an
// operation's.
var reservedFiles = map[string]bool{"registry": true, "routes": true, "types": true, "doc": true}

// fileBase is the name (without ".go") of the file of the tool name: the
// name itself, unless the go command would read its last word as a build
// constraint or it is one of the package's own files; then "_tool" is
// appended.
func fileBase(name string) string {
	last := name
	if i := strings.LastIndexByte(name, '_'); i >= 0 {
		last = name[i+1:]
	}
	if reservedFiles[name] || buildSuffixes[last] {
		return name + "_tool"
	}
	return name
}
