package retrieval_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ragfuse/ragfuse/retrieval"
)

func TestOpenFSMarkdown(t *testing.T) {
	fsys := fstest.MapFS{
		"kb/full.md":      {Data: []byte("---\nid: returns-7\ntitle: \"7-day returns\"\ntags: [returns, 'refunds']\nurl: https://example.com/r\nlang: en\n---\nReturn within 7 days.\n")},
		"kb/list-tags.md": {Data: []byte("---\r\ntitle: 发票\r\ntags:\r\n  - 发票\r\n  - 开票\r\n---\r\n开具电子发票。\r\n")},
		"kb/heading.md":   {Data: []byte("# Shipping times\n\nOrders ship the same day.")},
		"kb/csv-tags.md":  {Data: []byte("---\ntags: a, b\n---\nText.")},
		"kb/notes.txt":    {Data: []byte("not an article")},
		"kb/_draft.md":    {Data: []byte("draft")},
		"kb/.hidden/x.md": {Data: []byte("hidden")},
	}
	kb, err := retrieval.OpenFS(fsys, "kb")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]retrieval.Doc{
		"returns-7": {ID: "returns-7", Title: "7-day returns", Text: "Return within 7 days.", URL: "https://example.com/r", Tags: []string{"returns", "refunds"}},
		"list-tags": {ID: "list-tags", Title: "发票", Text: "开具电子发票。", Tags: []string{"发票", "开票"}},
		"heading":   {ID: "heading", Title: "Shipping times", Text: "# Shipping times\n\nOrders ship the same day."},
		"csv-tags":  {ID: "csv-tags", Title: "csv-tags", Text: "Text.", Tags: []string{"a", "b"}},
	}
	if kb.Len() != len(want) {
		t.Errorf("Len = %d, want %d (docs %v)", kb.Len(), len(want), ids(kb.Docs()))
	}
	for id, w := range want {
		got, ok := kb.Get(id)
		if !ok {
			t.Errorf("Get(%q) not found", id)
			continue
		}
		if got.ID != w.ID || got.Title != w.Title || got.Text != w.Text || got.URL != w.URL || !slices.Equal(got.Tags, w.Tags) {
			t.Errorf("Get(%q) = %+v, want %+v", id, got, w)
		}
	}
	if kb.Version() != 1 {
		t.Errorf("Version = %d, want 1", kb.Version())
	}
}

func TestOpenFSJSONL(t *testing.T) {
	fsys := fstest.MapFS{
		"faq.jsonl": {Data: []byte(`{"id":"a","title":"Refunds","text":"Refunds take 3 days.","tags":["refunds"]}

{"id":"b","text":"Invoices are emailed.","url":"https://example.com/b","extra":1}
`)},
	}
	kb, err := retrieval.OpenFS(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(kb.Docs()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("docs = %v, want [a b]", got)
	}
	b, _ := kb.Get("b")
	if b.Title != "b" || b.URL != "https://example.com/b" {
		t.Errorf("b = %+v, want title defaulting to the id", b)
	}
	docs, err := kb.Retrieve(context.Background(), "refund", 1)
	if err != nil || len(docs) != 1 || docs[0].ID != "a" {
		t.Errorf("Retrieve = %v, %v; want [a]", ids(docs), err)
	}
}

func TestOpenFSErrors(t *testing.T) {
	tests := []struct {
		name  string
		files fstest.MapFS
		want  string // substring of the error: file and line
		is    error
	}{
		{"front matter not closed", fstest.MapFS{"a.md": {Data: []byte("---\nid: a\nText")}}, "a.md:1:", nil},
		{"front matter line without colon", fstest.MapFS{"a.md": {Data: []byte("---\nid: a\njust words\n---\nText")}}, "a.md:3:", nil},
		{"empty id", fstest.MapFS{"a.md": {Data: []byte("---\nid:\n---\nText")}}, "a.md:2:", nil},
		{"tags not closed", fstest.MapFS{"a.md": {Data: []byte("---\ntags: [a, b\n---\nText")}}, "a.md:2:", nil},
		{"no body", fstest.MapFS{"a.md": {Data: []byte("---\nid: a\n---\n  \n")}}, "a.md: ", nil},
		{"id with space", fstest.MapFS{"a.md": {Data: []byte("---\nid: a b\n---\nText")}}, "a.md: ", nil},
		{"invalid UTF-8", fstest.MapFS{"a.md": {Data: []byte("Text \xff")}}, "a.md: ", nil},
		{"bad JSON", fstest.MapFS{"d.jsonl": {Data: []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\": \n")}}, "d.jsonl:2:", nil},
		{"JSON without id", fstest.MapFS{"d.jsonl": {Data: []byte("\n\n{\"text\":\"x\"}\n")}}, "d.jsonl:3:", nil},
		{"two values on a line", fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x"} {"id":"b","text":"y"}`)}}, "d.jsonl:1:", nil},
		// A closing bracket or brace after the object: json.Decoder.More
		// reports false before one, so the line once loaded.
		{"trailing ] after the object", fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x"}]`)}}, "d.jsonl:1:", nil},
		{"trailing } after the object", fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x"}` + "\n" + `{"id":"b","text":"y"}}`)}}, "d.jsonl:2:", nil},
		{"wrong JSON type", fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x","tags":"t"}`)}}, "d.jsonl:1:", nil},
		{"line too long", fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"` + strings.Repeat("x", 2<<20) + `"}`)}}, "d.jsonl:1:", nil},
		{"duplicate across files", fstest.MapFS{
			"a.md":    {Data: []byte("---\nid: same\n---\nText")},
			"b.jsonl": {Data: []byte(`{"id":"other","text":"x"}` + "\n" + `{"id":"same","text":"y"}`)},
		}, "b.jsonl:2: duplicate document id \"same\" (first defined in a.md)", retrieval.ErrDuplicateID},
		{"duplicate by file name", fstest.MapFS{
			"x/a.md": {Data: []byte("Text")},
			"y/a.md": {Data: []byte("Text")},
		}, "y/a.md: duplicate", retrieval.ErrDuplicateID},
		{"no documents", fstest.MapFS{"readme.txt": {Data: []byte("hi")}}, "no documents", retrieval.ErrNoDocuments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retrieval.OpenFS(tt.files, ".")
			if err == nil {
				t.Fatal("OpenFS succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			var le *retrieval.LoadError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *LoadError", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestOpenPath(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "---\nid: a\n---\nRefunds take 3 days.")
	write(t, filepath.Join(dir, "sub", "b.jsonl"), `{"id":"b","text":"Invoices"}`)
	kb, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if kb.Len() != 2 {
		t.Errorf("Len = %d, want 2", kb.Len())
	}
	one, err := retrieval.Open(filepath.Join(dir, "sub", "b.jsonl"))
	if err != nil || one.Len() != 1 {
		t.Fatalf("Open(file) = %v, %v; want one document", one, err)
	}
	write(t, filepath.Join(dir, "bad.md"), "---\nid: bad\n")
	if _, err := retrieval.Open(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "bad.md")+":1:") {
		t.Errorf("error %v does not name %s:1", err, filepath.Join(dir, "bad.md"))
	}
	if _, err := retrieval.Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestNew(t *testing.T) {
	kb, err := retrieval.New(smallDocs)
	if err != nil {
		t.Fatal(err)
	}
	if err := kb.Reload(); err != nil || kb.Version() != 2 || kb.Len() != len(smallDocs) {
		t.Errorf("Reload = %v, Version %d, Len %d; want nil, 2, %d", err, kb.Version(), kb.Len(), len(smallDocs))
	}
	for _, bad := range [][]retrieval.Doc{
		nil,
		{{ID: "a", Text: "x"}, {ID: "a", Text: "y"}},
		{{ID: "", Text: "x"}},
		{{ID: "a"}},
	} {
		if _, err := retrieval.New(bad); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", bad)
		}
	}
}

func TestDigestAndContentVersionFollowContentNotVersion(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), "# A\nfirst text")
	a, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := retrieval.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if a.Version() == b.Version() || a.Digest() != b.Digest() || len(a.Digest()) != 24 {
		t.Fatalf("same files: versions %d, %d, digests %q, %q; want different versions, one 24-digit digest",
			a.Version(), b.Version(), a.Digest(), b.Digest())
	}
	if a.ContentVersion() != b.ContentVersion() || a.ContentVersion() == 0 {
		t.Fatalf("same files: content versions %d, %d; want one, not 0", a.ContentVersion(), b.ContentVersion())
	}
	before, beforeCV := a.Digest(), a.ContentVersion()
	write(t, filepath.Join(dir, "a.md"), "# A\nsecond text")
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if a.Digest() == before || a.ContentVersion() == beforeCV {
		t.Fatalf("digest %q, content version %d unchanged after the text changed", before, beforeCV)
	}
}

func TestEmbeddedTestdataLoads(t *testing.T) {
	kb := openTestKB(t)
	var zh, en int
	for _, d := range kb.Docs() {
		switch {
		case strings.HasPrefix(d.ID, "zh-"):
			zh++
		case strings.HasPrefix(d.ID, "en-"):
			en++
		}
		if d.URL == "" || len(d.Tags) == 0 || d.Title == d.ID {
			t.Errorf("%s lacks url, tags or title", d.ID)
		}
	}
	if zh+en < 60 || zh < 25 || en < 25 {
		t.Errorf("knowledge base has %d Chinese and %d English articles, want at least 60, about half each", zh, en)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFSJSONLLineAtLimit: a JSON Lines line may be as long as a
// Markdown file, 1 MiB (1<<20 bytes, not counting its line end); one byte
// more is refused with the line's number.
func TestOpenFSJSONLLineAtLimit(t *testing.T) {
	line := func(n int) string {
		head, tail := `{"id":"big","text":"`, `"}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, end := range []string{"\n", "\r\n", ""} {
		files := fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x"}` + "\n" + line(1<<20) + end)}}
		kb, err := retrieval.OpenFS(files, ".")
		if err != nil {
			t.Fatalf("line of 1<<20 bytes ending in %q: %v", end, err)
		}
		if kb.Len() != 2 {
			t.Errorf("Len = %d, want 2", kb.Len())
		}
	}
	files := fstest.MapFS{"d.jsonl": {Data: []byte(`{"id":"a","text":"x"}` + "\n" + line(1<<20+1) + "\n")}}
	if _, err := retrieval.OpenFS(files, "."); err == nil || !strings.Contains(err.Error(), "d.jsonl:2: line longer than") {
		t.Errorf("line of 1<<20+1 bytes: error %v, want d.jsonl:2: line longer than …", err)
	}
}
