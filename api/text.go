package api

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// cleanText is the rule for the text a client sends (a question, a turn
// of history): it returns s without its control characters and reports
// whether anything readable is left. Tab, line feed and carriage return
// stay; the other white-space controls (vertical tab, form feed, U+0085)
// become a space; every other control character (C0, DEL, C1) is removed,
// so none reaches a prompt, a cache key or a log. Readable is anything but
// white space, control and format characters (unicode.Cf: zero-width
// spaces and joiners, the byte order mark…) and U+FFFD, which stands for
// bytes lost before the text reached the server. s is returned as it is
// when it holds no control character to remove.
func cleanText(s string) (string, bool) {
	readable, dirty := false, false
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.IsControl(r):
			dirty = true
		case unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
		default:
			readable = true
		}
	}
	if !dirty {
		return s, readable
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteRune(r)
		case unicode.IsControl(r) && unicode.IsSpace(r):
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), readable
}
