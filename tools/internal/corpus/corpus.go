// Package corpus reads a character-level text dataset as nanoGPT's
// shakespeare_char prepare.py makes it, for tools/gpt and tools/charlstm.
package corpus

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"unicode/utf8"
)

// Corpus is a character-level dataset, as nanoGPT's shakespeare_char
// prepare.py makes it: the vocabulary is the sorted set of the text's
// characters (Unicode code points, as Python's sorted(set(data))), the
// first 90% of the characters are the training split, the rest the
// validation split.
type Corpus struct {
	Chars      []rune // id -> character
	ids        map[rune]int32
	Train, Val []int32
}

// maxCorpus bounds what Load reads: 1 GiB of text, some 900 times
// Tiny Shakespeare. Its ids take four bytes a character in memory.
const maxCorpus = 1 << 30

// Load reads a UTF-8 text file of at most maxCorpus bytes; a longer
// one (or an endless one, /dev/zero) is an error after that many. A signal
// (ctx done) stops the read between chunks and returns ctx's error.
func Load(ctx context.Context, path string) (*Corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(ctxReader{ctx, io.LimitReader(f, maxCorpus+1)})
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(b) > maxCorpus {
		return nil, fmt.Errorf("data: %s holds more than %d bytes, the most a corpus may have", path, maxCorpus)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("data: %s is not UTF-8 text", path)
	}
	return New(string(b))
}

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// New makes a corpus of text.
func New(text string) (*Corpus, error) {
	runes := []rune(text)
	c := &Corpus{ids: map[rune]int32{}}
	for _, r := range runes {
		if _, ok := c.ids[r]; !ok {
			c.ids[r] = 0
			c.Chars = append(c.Chars, r)
		}
	}
	slices.Sort(c.Chars)
	for i, r := range c.Chars {
		c.ids[r] = int32(i)
	}
	data := c.Encode(string(runes))
	n := int(float64(len(data)) * 0.9) // Python's int(n*0.9)
	c.Train, c.Val = data[:n], data[n:]
	return c, nil
}

// Encode maps text to ids; a character not in the vocabulary panics (the
// callers encode only the corpus's own text, or check with known).
func (c *Corpus) Encode(s string) []int32 {
	out := make([]int32, 0, len(s))
	for _, r := range s {
		id, ok := c.ids[r]
		if !ok {
			panic(fmt.Sprintf("corpus: character %q is not in the vocabulary", r))
		}
		out = append(out, id)
	}
	return out
}

// Known returns the first character of s not in the vocabulary, if any.
func (c *Corpus) Known(s string) (rune, bool) {
	for _, r := range s {
		if _, ok := c.ids[r]; !ok {
			return r, false
		}
	}
	return 0, true
}

// Decode maps ids to text.
func (c *Corpus) Decode(ids []int32) string {
	rs := make([]rune, len(ids))
	for i, id := range ids {
		rs[i] = c.Chars[id]
	}
	return string(rs)
}

// Check returns an error unless both splits hold more than seq+1
// characters, as a batch of context seq needs.
func (c *Corpus) Check(seq int) error {
	if len(c.Val) <= seq+1 || len(c.Train) <= seq+1 {
		return fmt.Errorf("data: %d training and %d validation characters: too few for a context of %d", len(c.Train), len(c.Val), seq)
	}
	return nil
}

// Batch fills x and y (batch*seq ids each) with batch random windows of
// split, as nanoGPT's get_batch: each starts at a uniform offset in
// [0, len-seq), y is x shifted by one.
func Batch(split []int32, seq int, rng *rand.Rand, x, y []int32) {
	b := len(x) / seq
	for i := range b {
		o := rng.IntN(len(split) - seq)
		copy(x[i*seq:(i+1)*seq], split[o:o+seq])
		copy(y[i*seq:(i+1)*seq], split[o+1:o+1+seq])
	}
}
