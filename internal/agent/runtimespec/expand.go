package runtimespec

import "strings"

// expand replaces $(NAME) references in s by lookup's values the way the kubelet expands
// command, args, env values and subPathExpr: "$$" is an escaped "$", a reference lookup does not
// know stays as written, and a "$" that starts no reference is kept. It returns the names it could
// not resolve.
func expand(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
				missing = append(missing, name)
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), missing
}
