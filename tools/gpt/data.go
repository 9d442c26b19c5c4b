package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"unicode/utf8"
)

// corpus is a character-level dataset, as nanoGPT's shakespeare_char
// prepare.py makes it: the vocabulary is the sorted set of the text's
// characters (Unicode code points, as Python's sorted(set(data))), the
// first 90% of the characters are the training split, the rest the
// validation split.
type corpus struct {
	chars      []rune         // id -> character
	ids        map[rune]int32 // character -> id
	train, val []int32
}

// maxCorpus bounds what loadCorpus reads: 1 GiB of text, some 900 times
// Tiny Shakespeare. Its ids take four bytes a character in memory.
const maxCorpus = 1 << 30

// loadCorpus reads a UTF-8 text file of at most maxCorpus bytes; a longer
// one (or an endless one, /dev/zero) is an error after that many. A signal
// (ctx done) stops the read between chunks and returns ctx's error.
func loadCorpus(ctx context.Context, path string) (*corpus, error) {
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
	return newCorpus(string(b))
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

func newCorpus(text string) (*corpus, error) {
	runes := []rune(text)
	c := &corpus{ids: map[rune]int32{}}
	for _, r := range runes {
		if _, ok := c.ids[r]; !ok {
			c.ids[r] = 0
			c.chars = append(c.chars, r)
		}
	}
	slices.Sort(c.chars)
	for i, r := range c.chars {
		c.ids[r] = int32(i)
	}
	data := c.encode(string(runes))
	n := int(float64(len(data)) * 0.9) // Python's int(n*0.9)
	c.train, c.val = data[:n], data[n:]
	return c, nil
}

// encode maps text to ids; a character not in the vocabulary panics (the
// callers encode only the corpus's own text, or check with known).
func (c *corpus) encode(s string) []int32 {
	out := make([]int32, 0, len(s))
	for _, r := range s {
		id, ok := c.ids[r]
		if !ok {
			panic(fmt.Sprintf("gpt: character %q is not in the vocabulary", r))
		}
		out = append(out, id)
	}
	return out
}

// known returns the first character of s not in the vocabulary, if any.
func (c *corpus) known(s string) (rune, bool) {
	for _, r := range s {
		if _, ok := c.ids[r]; !ok {
			return r, false
		}
	}
	return 0, true
}

func (c *corpus) decode(ids []int32) string {
	rs := make([]rune, len(ids))
	for i, id := range ids {
		rs[i] = c.chars[id]
	}
	return string(rs)
}

// check returns an error unless both splits hold more than seq+1
// characters, as a batch of context seq needs.
func (c *corpus) check(seq int) error {
	if len(c.val) <= seq+1 || len(c.train) <= seq+1 {
		return fmt.Errorf("data: %d training and %d validation characters: too few for a context of %d", len(c.train), len(c.val), seq)
	}
	return nil
}

// batch fills x and y (batch*seq ids each) with batch random windows of
// split, as nanoGPT's get_batch: each starts at a uniform offset in
// [0, len-seq), y is x shifted by one.
func batch(split []int32, seq int, rng *rand.Rand, x, y []int32) {
	b := len(x) / seq
	for i := range b {
		o := rng.IntN(len(split) - seq)
		copy(x[i*seq:(i+1)*seq], split[o:o+seq])
		copy(y[i*seq:(i+1)*seq], split[o+1:o+1+seq])
	}
}
