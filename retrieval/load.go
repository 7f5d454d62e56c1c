package retrieval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors reported while loading a knowledge base, wrapped in a *LoadError.
var (
	ErrDuplicateID = errors.New("duplicate document id")
	ErrNoDocuments = errors.New("no documents")
)

// maxFileBytes bounds one Markdown file or one JSON Lines line.
const maxFileBytes = 1 << 20

// LoadError reports bad knowledge-base input: the file, the line when
// known (1-based; 0 when the problem is the whole file) and what is wrong.
type LoadError struct {
	File string
	Line int
	Err  error
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("retrieval: %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("retrieval: %s: %v", e.File, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// loadDocs reads every Markdown (.md, .markdown) and JSON Lines (.jsonl)
// file under dir in fsys, in lexical order; dir may also name one file.
// Files and folders whose names start with "." or "_" are skipped. name is
// how dir is shown in errors.
func loadDocs(fsys fs.FS, dir, name string) ([]Doc, error) {
	display := func(p string) string {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if rel == "" {
			return name
		}
		return path.Join(name, rel)
	}
	var docs []Doc
	firstIn := make(map[string]string) // id -> file that defined it
	add := func(file string, line int, d Doc) error {
		if prev, ok := firstIn[d.ID]; ok {
			return &LoadError{File: file, Line: line, Err: fmt.Errorf("%w %q (first defined in %s)", ErrDuplicateID, d.ID, prev)}
		}
		firstIn[d.ID] = file
		docs = append(docs, d)
		return nil
	}
	err := fs.WalkDir(fsys, dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return &LoadError{File: display(p), Err: err}
		}
		base := de.Name()
		if p != dir && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
			if de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		switch strings.ToLower(path.Ext(base)) {
		case ".md", ".markdown":
			data, err := readLimited(fsys, p)
			if err != nil {
				return &LoadError{File: display(p), Err: err}
			}
			d, line, err := parseMarkdown(data, strings.TrimSuffix(base, path.Ext(base)))
			if err != nil {
				return &LoadError{File: display(p), Line: line, Err: err}
			}
			return add(display(p), 0, d)
		case ".jsonl":
			return loadJSONL(fsys, p, display(p), add)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, &LoadError{File: name, Err: ErrNoDocuments}
	}
	return docs, nil
}

func readLimited(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("file larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

// parseMarkdown parses one article: optional front matter between "---"
// lines (id, title, tags, url; other keys are ignored) and the body as the
// text. The id defaults to defID, the title to the first "# " heading,
// then to the id. On error it returns the 1-based line at fault, if any.
func parseMarkdown(data []byte, defID string) (Doc, int, error) {
	if !utf8.Valid(data) {
		return Doc{}, 0, errors.New("not valid UTF-8")
	}
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	d := Doc{ID: defID}
	body := lines
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		end := -1
		for i := 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "---" {
				end = i
				break
			}
		}
		if end < 0 {
			return Doc{}, 1, errors.New("front matter has no closing ---")
		}
		if line, err := parseFrontMatter(lines[1:end], &d); err != nil {
			return Doc{}, line + 1, err
		}
		body = lines[end+1:]
	}
	d.Text = strings.TrimSpace(strings.Join(body, "\n"))
	if d.Title == "" {
		for _, l := range body {
			if t, ok := strings.CutPrefix(strings.TrimSpace(l), "# "); ok {
				d.Title = strings.TrimSpace(t)
				break
			}
		}
	}
	if d.Title == "" {
		d.Title = d.ID
	}
	if err := checkDoc(d); err != nil {
		return Doc{}, 0, err
	}
	return d, 0, nil
}

// parseFrontMatter fills d from "key: value" lines. Tags are a list in
// brackets, a comma-separated value, or "- item" lines after "tags:". It
// returns the 1-based line (within lines) of an error.
func parseFrontMatter(lines []string, d *Doc) (int, error) {
	inTags := false
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if item, ok := strings.CutPrefix(l, "- "); ok && inTags {
			if t := unquote(item); t != "" {
				d.Tags = append(d.Tags, t)
			}
			continue
		}
		inTags = false
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return i + 1, fmt.Errorf("front matter: want \"key: value\", got %q", l)
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		switch key {
		case "id":
			d.ID = unquote(val)
			if d.ID == "" {
				return i + 1, errors.New("front matter: empty id")
			}
		case "title":
			d.Title = unquote(val)
		case "url":
			d.URL = unquote(val)
		case "tags":
			if val == "" {
				inTags = true
				continue
			}
			if !strings.HasPrefix(val, "[") {
				d.Tags = append(d.Tags, splitList(val)...)
				continue
			}
			inner, ok := strings.CutSuffix(strings.TrimPrefix(val, "["), "]")
			if !ok {
				return i + 1, errors.New("front matter: tags list has no closing ]")
			}
			d.Tags = append(d.Tags, splitList(inner)...)
		}
	}
	return 0, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if t := unquote(p); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
	}
	return strings.TrimSpace(s)
}

// loadJSONL reads one Doc per line; blank lines are skipped.
func loadJSONL(fsys fs.FS, p, file string, add func(file string, line int, d Doc) error) error {
	f, err := fsys.Open(p)
	if err != nil {
		return &LoadError{File: file, Err: err}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), maxFileBytes+len("\r\n")) // room for the line end
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) > maxFileBytes {
			return &LoadError{File: file, Line: line, Err: fmt.Errorf("line longer than %d bytes", maxFileBytes)}
		}
		b := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return &LoadError{File: file, Line: line, Err: errors.New("not valid UTF-8")}
		}
		var d Doc
		// Unmarshal, not a Decoder: it refuses anything after the object,
		// a stray ] or } included.
		if err := json.Unmarshal(b, &d); err != nil {
			return &LoadError{File: file, Line: line, Err: fmt.Errorf("bad JSON: %w", err)}
		}
		d.ID, d.Title, d.Text, d.Score = strings.TrimSpace(d.ID), strings.TrimSpace(d.Title), strings.TrimSpace(d.Text), 0
		if d.ID == "" {
			return &LoadError{File: file, Line: line, Err: errors.New("missing id")}
		}
		if d.Title == "" {
			d.Title = d.ID
		}
		if err := checkDoc(d); err != nil {
			return &LoadError{File: file, Line: line, Err: err}
		}
		if err := add(file, line, d); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes", maxFileBytes)
		}
		return &LoadError{File: file, Line: line + 1, Err: err}
	}
	return nil
}

func checkDoc(d Doc) error {
	if strings.IndexFunc(d.ID, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("id %q contains white space", d.ID)
	}
	if d.Text == "" {
		return fmt.Errorf("document %q has no text", d.ID)
	}
	return nil
}

var errEmptyID = errors.New("document with an empty id")

type dupError struct{ id string }

func (e *dupError) Error() string { return fmt.Sprintf("%v %q", ErrDuplicateID, e.id) }
func (e *dupError) Unwrap() error { return ErrDuplicateID }
