package api

import "testing"

func TestCleanText(t *testing.T) {
	for _, tc := range []struct {
		in, out  string
		readable bool
	}{
		{"How do I return an item?", "How do I return an item?", true},
		{"", "", false},
		{" \t\r\n", " \t\r\n", false},
		{"\x00\x07\x7f", "", false},
		{"\u0085", " ", false},
		{"\ufffd\u200b\ufeff", "\ufffd\u200b\ufeff", false},
		{"a\x00b\u009bc\vd\fe", "abc d e", true},
		{"退货\x1b政策", "退货政策", true},
		{"\u200d👍", "\u200d👍", true},
	} {
		out, readable := cleanText(tc.in)
		if out != tc.out || readable != tc.readable {
			t.Errorf("cleanText(%q) = %q, %v; want %q, %v", tc.in, out, readable, tc.out, tc.readable)
		}
	}
}
