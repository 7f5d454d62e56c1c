package cache

import (
	"context"
	"math"
)

// DefaultHashDim is the dimension of a HashEmbedder created with dim 0.
const DefaultHashDim = 256

// Feature weights of the HashEmbedder.
const (
	wWord     = 1.0  // a content word (stemmed)
	wStop     = 0.15 // a stopword or a Han stop phrase
	wBigram   = 0.7  // two adjacent content words
	wTrigram  = 0.2  // a character trigram of a content word
	wNumber   = 1.0  // a number
	wHan      = 0.5  // a Han character
	wHanPair  = 1.0  // two adjacent Han characters
	wPolarity = 1.0  // extra weight of a negation or cancel word
)

// Feature kinds, mixed into the hash so that equal strings of different kinds
// land in different buckets.
const (
	fWord uint64 = iota + 1
	fStop
	fBigram
	fTrigram
	fNumber
	fHan
	fHanPair
	fPolarity
)

// HashEmbedder embeds text without any service, by feature hashing: word
// unigrams, bigrams of adjacent content words and character trigrams for
// Latin text; characters and character bigrams for Han text; numbers; and a
// polarity feature for negation and cancel words. Each feature adds a signed
// weight to one of Dim buckets chosen by a 64-bit FNV-1a hash, and the
// vector is L2-normalized. The result is the same in every process.
//
// Texts that share most of their words get cosine similarities close to 1,
// texts about different things close to 0; it measures wording, not meaning,
// so it suits a cache of repeated questions and offline demos. A HashEmbedder
// is safe for concurrent use.
type HashEmbedder struct {
	dim int
}

var _ Embedder = (*HashEmbedder)(nil)

// NewHashEmbedder returns a HashEmbedder of dimension dim (0 or less means
// DefaultHashDim).
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim <= 0 {
		dim = DefaultHashDim
	}
	return &HashEmbedder{dim: dim}
}

// Dim returns the dimension of the vectors.
func (h *HashEmbedder) Dim() int { return h.dim }

// Embed returns one vector per text. It never fails except when ctx is done.
func (h *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*h.dim)
	for i, t := range texts {
		out[i] = backing[i*h.dim : (i+1)*h.dim : (i+1)*h.dim]
		h.EmbedInto(out[i], t)
	}
	return out, nil
}

// EmbedInto writes the embedding of text into dst, which must have length
// Dim (a shorter dst is filled as far as it goes). It does not allocate.
func (h *HashEmbedder) EmbedInto(dst []float32, text string) {
	clear(dst)
	if len(dst) == 0 {
		return
	}
	var prevWord, prevHan uint64
	sc := newScanner(text)
	for {
		t, ok := sc.next()
		if !ok {
			break
		}
		if t.brk {
			prevWord, prevHan = 0, 0
		}
		switch t.kind {
		case tokStop, tokHanStop:
			add(dst, hashBytes(fStop, t.text), wStop)
		case tokNumber:
			add(dst, hashBytes(fNumber, t.text), wNumber)
			prevWord, prevHan = 0, 0
		case tokWord:
			hw := hashBytes(fWord, t.text)
			add(dst, hw, wWord)
			if prevWord != 0 {
				add(dst, mix(fBigram, prevWord, hw), wBigram)
			}
			prevWord, prevHan = hw, 0
			addTrigrams(dst, t.raw)
		case tokHan:
			hh := hashBytes(fHan, t.text)
			add(dst, hh, wHan)
			if prevHan != 0 {
				add(dst, mix(fHanPair, prevHan, hh), wHanPair)
			}
			prevHan, prevWord = hh, 0
		}
		if t.pol != 0 {
			add(dst, mix(fPolarity, uint64(t.pol), 0), wPolarity)
		}
	}
	var ss float64
	for _, v := range dst {
		ss += float64(v) * float64(v)
	}
	if ss == 0 {
		// Nothing but punctuation: a fixed unit vector, so that such texts
		// match each other and nothing else much.
		dst[0] = 1
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range dst {
		dst[i] *= inv
	}
}

// addTrigrams adds the character trigrams of w with boundary marks
// ("^re", "ret", …, "ns$"); of a word longer than 64 bytes, those of its
// first 64.
func addTrigrams(dst []float32, w []byte) {
	if len(w) < 3 {
		return
	}
	var buf [66]byte
	buf[0] = '^'
	n := 1 + copy(buf[1:65], w)
	buf[n] = '$'
	n++
	for i := 0; i+3 <= n; i++ {
		add(dst, hashBytes(fTrigram, buf[i:i+3]), wTrigram)
	}
}

// add adds ±weight to the bucket chosen by h; the sign comes from a bit
// the bucket index does not use.
func add(dst []float32, h uint64, weight float32) {
	i := int((h >> 1) % uint64(len(dst)))
	if h&1 == 0 {
		weight = -weight
	}
	dst[i] += weight
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashBytes is FNV-1a of b, seeded by kind.
func hashBytes(kind uint64, b []byte) uint64 {
	h := uint64(fnvOffset) ^ kind
	h *= fnvPrime
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return final(h)
}

// mix combines two hashes into the hash of a pair feature.
func mix(kind, a, b uint64) uint64 {
	return final(a*0x9E3779B97F4A7C15 ^ b ^ kind*0xC2B2AE3D27D4EB4F)
}

// final is a 64-bit finalizer (from SplitMix64) so that low bits are well
// mixed for the modulo and the sign.
func final(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 27
	h *= 0x94D049BB133111EB
	h ^= h >> 31
	return h
}
