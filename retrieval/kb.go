package retrieval

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// KnowledgeBase is a set of documents loaded from Markdown and JSON Lines
// files, with a BM25 index over them. Reload re-reads the files and swaps
// in a new snapshot atomically: a question already running finishes on the
// snapshot it started with. A KnowledgeBase is safe for concurrent use.
type KnowledgeBase struct {
	fsys fs.FS
	dir  string // dir within fsys: a folder or one file
	name string // how the source is shown in errors

	reload sync.Mutex // serializes Reload; readers never take it
	cur    atomic.Pointer[snapshot]
}

// snapshot is one immutable version of the knowledge base.
type snapshot struct {
	version uint64
	docs    []Doc
	byID    map[string]int
	index   *Index
	digest  string // see KnowledgeBase.Digest
	content uint64 // see KnowledgeBase.ContentVersion
}

var (
	_ VectorRetriever = (*KnowledgeBase)(nil)
	_ Retriever       = (*KnowledgeBase)(nil)
)

// Open loads the knowledge base at path: a folder, searched recursively,
// or a single .md or .jsonl file. See OpenFS for the format.
func Open(path string) (*KnowledgeBase, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &LoadError{File: path, Err: err}
	}
	if fi.IsDir() {
		return openFS(os.DirFS(path), ".", path)
	}
	return openFS(os.DirFS(filepath.Dir(path)), filepath.Base(path), path)
}

// OpenFS loads the knowledge base in dir of fsys (use "." for the root;
// dir may also name one file), for example an embed.FS.
//
// Markdown files (.md, .markdown) hold one article each: optional front
// matter between two "---" lines with "key: value" lines for id, title,
// tags ([a, b], "a, b" or "- a" lines) and url, then the body, which is the
// document's text. Other front-matter keys are ignored. The id defaults to
// the file name without extension, the title to the first "# " heading.
// JSON Lines files (.jsonl) hold one Doc object per line and need an id.
// Names starting with "." or "_" are skipped. Bad input, duplicate ids and
// an empty knowledge base are reported as a *LoadError naming the file and
// line.
func OpenFS(fsys fs.FS, dir string) (*KnowledgeBase, error) {
	return openFS(fsys, dir, dir)
}

func openFS(fsys fs.FS, dir, name string) (*KnowledgeBase, error) {
	kb := &KnowledgeBase{fsys: fsys, dir: dir, name: name}
	s, err := kb.load(1)
	if err != nil {
		return nil, err
	}
	kb.cur.Store(s)
	return kb, nil
}

// New returns a knowledge base over docs, which has nothing to reload
// from: Reload rebuilds the same documents and bumps the version. Docs
// need a unique, non-empty ID and some text.
func New(docs []Doc) (*KnowledgeBase, error) {
	kb := &KnowledgeBase{name: "documents"}
	s, err := newSnapshot(1, cloneDocs(docs), kb.name)
	if err != nil {
		return nil, err
	}
	kb.cur.Store(s)
	return kb, nil
}

func (kb *KnowledgeBase) load(version uint64) (*snapshot, error) {
	docs, err := loadDocs(kb.fsys, kb.dir, kb.name)
	if err != nil {
		return nil, err
	}
	return newSnapshot(version, docs, kb.name)
}

func newSnapshot(version uint64, docs []Doc, name string) (*snapshot, error) {
	if len(docs) == 0 {
		return nil, &LoadError{File: name, Err: ErrNoDocuments}
	}
	byID := make(map[string]int, len(docs))
	for i, d := range docs {
		if _, dup := byID[d.ID]; dup {
			return nil, &LoadError{File: name, Err: &dupError{d.ID}}
		}
		if err := checkDoc(d); d.ID == "" || err != nil {
			if err == nil {
				err = errEmptyID
			}
			return nil, &LoadError{File: name, Err: err}
		}
		byID[d.ID] = i
	}
	sum := digest(docs)
	return &snapshot{version: version, docs: docs, byID: byID, index: NewIndex(docs), digest: sum, content: contentVersion(sum)}, nil
}

// Reload re-reads the source and, if it loads cleanly, swaps in the new
// documents and bumps Version. On error the current documents stay in
// place and the error is returned. Concurrent Reloads run one at a time.
func (kb *KnowledgeBase) Reload() error {
	kb.reload.Lock()
	defer kb.reload.Unlock()
	old := kb.cur.Load()
	var (
		s   *snapshot
		err error
	)
	if kb.fsys == nil {
		s, err = newSnapshot(old.version+1, old.docs, kb.name)
	} else {
		s, err = kb.load(old.version + 1)
	}
	if err != nil {
		return err
	}
	kb.cur.Store(s)
	return nil
}

// Version returns the knowledge-base version: 1 after loading, plus one
// per successful Reload. Answers built from documents remember it, so a
// cache can drop them when the knowledge base changes.
func (kb *KnowledgeBase) Version() uint64 { return kb.cur.Load().version }

// Digest returns a short hash of the documents' contents (ids, titles,
// texts, URLs and tags, in order). Unlike Version, which counts this
// process's loads, two knowledge bases holding the same documents have the
// same digest, so instances of a cluster can tell whether they agree.
func (kb *KnowledgeBase) Digest() string { return kb.cur.Load().digest }

// ContentVersion returns a number derived from Digest, never 0: equal for
// knowledge bases holding the same documents, in any process, and
// different (but for a 2^-64 chance) when the documents differ. Caches
// shared between instances mark entries with it, since Version counts one
// process's loads and a restarted instance is back at 1.
func (kb *KnowledgeBase) ContentVersion() uint64 { return kb.cur.Load().content }

// Len returns the number of documents.
func (kb *KnowledgeBase) Len() int { return len(kb.cur.Load().docs) }

// Docs returns a copy of all documents, in load order (file by file, in
// lexical path order).
func (kb *KnowledgeBase) Docs() []Doc { return cloneDocs(kb.cur.Load().docs) }

// Get returns the document with the given id.
func (kb *KnowledgeBase) Get(id string) (Doc, bool) {
	s := kb.cur.Load()
	i, ok := s.byID[id]
	if !ok {
		return Doc{}, false
	}
	return cloneDoc(s.docs[i]), true
}

// Retrieve returns the k documents most relevant to query by BM25, best
// first; see Index.Retrieve.
func (kb *KnowledgeBase) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	return kb.cur.Load().index.Retrieve(ctx, query, k)
}

// RetrieveVector is Retrieve: the knowledge base's own index is lexical,
// so vec is ignored. Wrap the knowledge base in a Hybrid to use vectors.
func (kb *KnowledgeBase) RetrieveVector(ctx context.Context, query string, vec []float32, k int) ([]Doc, error) {
	return kb.Retrieve(ctx, query, k)
}

// contentVersion is the first 8 bytes of the hex digest sum, never 0.
func contentVersion(sum string) uint64 {
	b, _ := hex.DecodeString(sum) // sum is digest's hex: cannot fail
	return max(binary.BigEndian.Uint64(b[:8]), 1)
}

// digest hashes docs for Digest: the first 12 bytes of the SHA-256 of
// their JSON forms, in order.
func digest(docs []Doc) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, d := range docs {
		d.Score = 0
		_ = enc.Encode(d) // writing to a hash cannot fail
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
