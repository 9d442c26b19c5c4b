package corpus

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCorpus(t *testing.T) {
	c, err := Load(context.Background(), "../../../testdata/tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	// nanoGPT's prepare.py prints: vocab size 65, train 1,003,854 tokens,
	// val 111,540 tokens.
	if len(c.Chars) != 65 || len(c.Train) != 1003854 || len(c.Val) != 111540 {
		t.Fatalf("vocab %d, train %d, val %d; want 65, 1003854, 111540", len(c.Chars), len(c.Train), len(c.Val))
	}
	if got := string(c.Chars[:14]); got != "\n !$&',-.3:;?A" {
		t.Errorf("vocabulary starts %q", got)
	}
	if got := c.Decode(c.Train[:14]); got != "First Citizen:" {
		t.Errorf("train starts %q", got)
	}
	if got := c.Encode("hi there"); !slices.Equal(got, []int32{46, 47, 1, 58, 46, 43, 56, 43}) {
		t.Errorf("encode(\"hi there\") = %v, want prepare.py's [46 47 1 58 46 43 56 43]", got) // stoi of the sorted set
	}
	if r, ok := c.Known("héllo"); ok || r != 'é' {
		t.Errorf("known: %q %v", r, ok)
	}
}

func TestBatch(t *testing.T) {
	c, err := New("abcdefghijklmnopqrstuvwxyz0123456789")
	if err != nil {
		t.Fatal(err)
	}
	const seq, b = 5, 3
	x, y := make([]int32, b*seq), make([]int32, b*seq)
	Batch(c.Train, seq, rand.New(rand.NewPCG(1, 2)), x, y)
	for i := range b { // every character is distinct: its id gives its offset
		xs, ys := x[i*seq:(i+1)*seq], y[i*seq:(i+1)*seq]
		o := slices.Index(c.Train, xs[0])
		if o < 0 || o+seq >= len(c.Train) || !slices.Equal(xs, c.Train[o:o+seq]) || !slices.Equal(ys, c.Train[o+1:o+1+seq]) {
			t.Fatalf("row %d: x %v y %v: not a window of the training split and its shift by one", i, xs, ys)
		}
	}
	x2, y2 := make([]int32, b*seq), make([]int32, b*seq)
	Batch(c.Train, seq, rand.New(rand.NewPCG(1, 2)), x2, y2)
	if !slices.Equal(x, x2) || !slices.Equal(y, y2) {
		t.Error("the same seed gave other batches")
	}
	// Every offset in [0, len-seq) is drawn, the last included.
	seen := map[int]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		Batch(c.Train, seq, rng, x, y)
		seen[slices.Index(c.Train, x[0])] = true
	}
	if len(seen) != len(c.Train)-seq {
		t.Errorf("%d distinct offsets drawn, want %d", len(seen), len(c.Train)-seq)
	}
	if err := c.Check(len(c.Val)); err == nil {
		t.Error("a context longer than the validation split passed the check")
	}
}

// TestLoadCorpusSignal: a signal while the corpus is read stops the read
// (an endless input too) with the context's error.
func TestLoadCorpusSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, "../../../testdata/tinyshakespeare/input.txt"); !errors.Is(err, context.Canceled) {
		t.Errorf("a load after the signal: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	n := 0
	r := ctxReader{ctx, readerFunc(func(p []byte) (int, error) {
		if n++; n == 3 {
			cancel() // the signal comes while reading
		}
		return len(p), nil // endless
	})}
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) || n != 3 {
		t.Errorf("an endless read: %v after %d reads, want context.Canceled after 3", err, n)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
