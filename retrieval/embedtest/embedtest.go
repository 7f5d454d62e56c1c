// Package embedtest provides embedders for tests of code that ranks by
// embeddings, standing in for embedding models whose scores mean little or
// sit on an unusual scale: NoSignal, whose vectors carry no information
// about the text; Offset, which lifts every similarity of another embedder
// towards one value, as several popular embedding models do for unrelated
// texts; and Noisy, which mixes random noise into another embedder's
// vectors, as a dense model's unrelated texts scatter. With them, and the
// made-up questions of Nonsense, a test shows that a relevance rule holds
// whatever the embedder's scale.
package embedtest

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/ragfuse/ragfuse/cache"
)

// DefaultDim is the dimension of a NoSignal embedder with Dim 0.
const DefaultDim = 256

// NoSignal embeds each text as a random unit vector drawn from a seed
// that is the text's hash: the same text always gets the same vector, and
// two different texts are as similar as two random directions (cosine
// about 0, spread 1/sqrt(Dim)), whatever they say. It is safe for
// concurrent use.
type NoSignal struct {
	Dim int // vector dimension; 0 means DefaultDim
}

var _ cache.Embedder = NoSignal{}

// Embed returns one vector per text. It fails only when ctx is done.
func (n NoSignal) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dim := n.Dim
	if dim <= 0 {
		dim = DefaultDim
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		out[i] = unit(v)
	}
	return out, nil
}

// Offset wraps an embedder of unit vectors so that every cosine c between
// two of its vectors becomes Base + (1-Base)*c: unrelated texts (c about
// 0) score about Base, identical texts still 1. It adds one dimension
// shared by every text. Its ranking is the wrapped embedder's, only on
// another scale. It is safe for concurrent use if Embedder is.
type Offset struct {
	Embedder cache.Embedder
	Base     float64 // the cosine of unrelated texts, in [0, 1); 0.75 if 0
}

var _ cache.Embedder = Offset{}

// Embed returns the wrapped embedder's vectors, normalized and extended by
// the shared dimension, or its error.
func (o Offset) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := o.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	base := o.Base
	if base <= 0 || base >= 1 {
		base = 0.75
	}
	out := make([][]float32, len(vs))
	for i, v := range vs {
		w := make([]float32, len(v)+1)
		scale := float32(math.Sqrt(1 - base))
		for j, x := range unit(append([]float32(nil), v...)) {
			w[j] = x * scale
		}
		w[len(v)] = float32(math.Sqrt(base))
		out[i] = w
	}
	return out, nil
}

// unit scales v to length 1 in place and returns it; a zero v stays zero.
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	s := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return v
}

// Noisy wraps an embedder of unit vectors and mixes into each of its
// vectors a NoSignal vector of the same text: every cosine c becomes about
// (1-Noise)*c plus a random spread of about Noise/sqrt(Dim). It models a
// dense embedding model, whose unrelated texts score a little above or
// below each other at random, with the wrapped embedder's signal. It is
// safe for concurrent use if Embedder is.
type Noisy struct {
	Embedder cache.Embedder
	Noise    float64 // the noise's share of each vector, in (0, 1); 0.5 if 0
}

var _ cache.Embedder = Noisy{}

// Embed returns the mixed vectors, or the wrapped embedder's error.
func (n Noisy) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := n.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	a := n.Noise
	if a <= 0 || a >= 1 {
		a = 0.5
	}
	out := make([][]float32, len(vs))
	for i, v := range vs {
		noise, _ := NoSignal{Dim: len(v)}.Embed(ctx, texts[i:i+1])
		w := unit(append([]float32(nil), v...))
		for j := range w {
			w[j] = float32(math.Sqrt(1-a))*w[j] + float32(math.Sqrt(a))*noise[0][j]
		}
		out[i] = unit(w)
	}
	return out, nil
}

// Nonsense returns n made-up questions, the same on every call: half are
// strings of Latin consonants ("jxvjxjqzv vxzvjvqjzq?"), half runs of
// random Chinese characters. No knowledge base covers them, so a
// retriever must return nothing for them whatever the embedder.
func Nonsense(n int) []string {
	rng := rand.New(rand.NewPCG(21, 21))
	out := make([]string, n)
	for i := range out {
		var sb strings.Builder
		for w := range 2 + rng.IntN(3) {
			if w > 0 && i%2 == 0 {
				sb.WriteByte(' ')
			}
			for range 4 + rng.IntN(6) {
				if i%2 == 0 {
					sb.WriteByte("bcdfghjklmnpqrstvwxz"[rng.IntN(20)])
				} else {
					sb.WriteRune(rune(0x4E00 + rng.IntN(0x9FA5-0x4E00)))
				}
			}
		}
		sb.WriteByte('?')
		out[i] = sb.String()
	}
	return out
}
