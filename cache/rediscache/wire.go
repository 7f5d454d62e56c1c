package rediscache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/ragfuse/ragfuse/cache"
)

// errWire reports an entry read from Redis that cannot be used.
var errWire = errors.New("rediscache: malformed entry")

// wireEntry is an entry as Redis holds it, in the entry's key and on the
// stream.
type wireEntry struct {
	Tenant   string         `json:"t"`
	Question string         `json:"q"`
	Text     string         `json:"a"`
	Model    string         `json:"m,omitempty"`
	Source   string         `json:"s,omitempty"`
	Docs     []cache.DocRef `json:"d,omitempty"`
	KB       uint64         `json:"kb"`
	Created  int64          `json:"c"` // Unix nanoseconds
	Expires  int64          `json:"x"` // Unix nanoseconds
	Vec      []byte         `json:"v"` // float32 components, little-endian
	Origin   string         `json:"o"` // the instance that stored it
}

// item is one entry waiting to be written, as Put stored it: the writer
// encodes it, so that a question waits for no more than a copy.
type item struct {
	tenant string
	vec    []float32 // a copy of the question's vector
	e      cache.Entry
	seq    uint64 // its place in the queue
}

// keys names what the package keeps in Redis under one prefix.
type keys struct{ prefix string }

// entry returns the key of tenant's entry for question: the tenant,
// escaped so it holds no ':', and a hash of the normalized question.
func (k keys) entry(tenant, question string) string {
	h := sha256.Sum256([]byte(cache.Normalize(question)))
	return k.prefix + ":cache:e:" + url.QueryEscape(tenant) + ":" + hex.EncodeToString(h[:16])
}

// tenantOf returns the tenant an entry key carries.
func (k keys) tenantOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, k.prefix+":cache:e:")
	if !ok {
		return "", false
	}
	esc, _, ok := strings.Cut(rest, ":")
	if !ok {
		return "", false
	}
	t, err := url.QueryUnescape(esc)
	return t, err == nil
}

func (k keys) index() string  { return k.prefix + ":cache:index" }
func (k keys) stream() string { return k.prefix + ":cache:stream" }

// encode returns the wire form of e, tenant's entry embedded as vec.
func encode(tenant string, vec []float32, e cache.Entry, origin string) []byte {
	w := wireEntry{Tenant: tenant, Question: e.Question, Text: e.Text, Model: e.Model, Source: e.Source, Docs: e.Docs,
		KB: e.KBVersion, Created: e.Created.UnixNano(), Expires: e.Expires.UnixNano(), Origin: origin,
		Vec: make([]byte, 4*len(vec))}
	for i, f := range vec {
		binary.LittleEndian.PutUint32(w.Vec[4*i:], math.Float32bits(f))
	}
	b, _ := json.Marshal(w) // cannot fail: strings, numbers and bytes only
	return b
}

// decode parses an entry's wire form.
func decode(b []byte) (wireEntry, []float32, cache.Entry, error) {
	var w wireEntry
	if err := json.Unmarshal(b, &w); err != nil || len(w.Vec)%4 != 0 || len(w.Vec) == 0 {
		return wireEntry{}, nil, cache.Entry{}, errWire
	}
	vec := make([]float32, len(w.Vec)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.Vec[4*i:]))
	}
	e := cache.Entry{Question: w.Question, Text: w.Text, Model: w.Model, Source: w.Source, Docs: w.Docs,
		KBVersion: w.KB, Created: time.Unix(0, w.Created), Expires: time.Unix(0, w.Expires)}
	return w, vec, e, nil
}
