package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// Tests of unscale_check's word layout: chunks at any word offset (the head
// before a 16-byte boundary, the uvec4 run and the tail), odd fp16 counts
// (the padding half is kept and never checked), and an inf or NaN found in
// every position, in both the storage-buffer and the texel form.

const uwWords = 1200

// uwRun unscales chunk (first word, count, dtype code) of words and returns
// the words after it and found; ok is false if the form cannot run here.
func uwRun(t *testing.T, ls *tensor.LossScale, x, found *tensor.Tensor, words []uint32, chunk [3]uint32, texels bool) ([]uint32, float32, bool) {
	t.Helper()
	raw := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	require.NoError(t, x.SetBytes(raw))
	ok, err := ls.UnscaleWords(x, [][3]uint32{chunk}, found, texels)
	require.NoError(t, err)
	if !ok {
		return nil, 0, false
	}
	raw, err = x.Bytes()
	require.NoError(t, err)
	out := make([]uint32, len(words))
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out, ampItem(t, found), true
}

// uwWant is what unscale makes of words within chunk, as fp32 rounds it.
func uwWant(words []uint32, chunk [3]uint32, inv float32) []uint32 {
	want := append([]uint32(nil), words...)
	first, n := chunk[0], chunk[1]
	if chunk[2] == 0 {
		for i := first; i < first+n; i++ {
			want[i] = math.Float32bits(math.Float32frombits(words[i]) * inv)
		}
		return want
	}
	half := func(h uint32) uint32 {
		return uint32(float16.Fromfloat32(float16.Frombits(uint16(h)).Float32() * inv).Bits())
	}
	for e := uint32(0); e < n; e++ {
		i, sh := first+e/2, 16*(e%2)
		want[i] = want[i]&^(0xFFFF<<sh) | half(words[i]>>sh&0xFFFF)<<sh
	}
	return want
}

// uwRandom returns words of finite values, as fp32 or as two fp16 each.
func uwRandom(r *rand.Rand, fp16 bool) []uint32 {
	w := make([]uint32, uwWords)
	for i := range w {
		if fp16 {
			lo := float16.Fromfloat32(float32(r.NormFloat64() * 100)).Bits()
			hi := float16.Fromfloat32(float32(r.NormFloat64() * 100)).Bits()
			w[i] = uint32(lo) | uint32(hi)<<16
		} else {
			w[i] = math.Float32bits(float32(r.NormFloat64() * 1000))
		}
	}
	return w
}

// uwSetup returns a loss scale at scale that has scaled once (so that its
// inverse is on the device), a buffer of uwWords words and a found flag,
// released when t ends.
func uwSetup(t *testing.T, scale float64) (ls *tensor.LossScale, x, found *tensor.Tensor) {
	d := devtest.Open(t)
	ls = tensor.NewLossScale(scale, 0)
	t.Cleanup(func() { ls.Close() })
	one, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	ls.Scale(one).Release()
	x = tensor.New(d, tensor.Float32, uwWords)
	t.Cleanup(x.Release)
	found = tensor.New(d, tensor.Float32, 1)
	t.Cleanup(found.Release)
	return ls, x, found
}

func TestLossScaleUnscaleWords(t *testing.T) {
	const scale = 3072.0
	inv := float32(1 / float64(float32(scale)))
	ls, x, found := uwSetup(t, scale)
	r := rand.New(rand.NewPCG(1, 2))
	for _, texels := range []bool{false, true} {
		for code := uint32(0); code < 2; code++ {
			words := uwRandom(r, code == 1)
			for first := uint32(1); first <= 4; first++ {
				for _, n := range []uint32{1, 2, 3, 4, 5, 7, 8, 9, 13, 64, 67, 1029, 2 * 1029} {
					if code == 0 && n > uwWords-8 {
						continue
					}
					c := [3]uint32{first, n, code}
					name := fmt.Sprintf("texels %v, dtype %d, first word %d, count %d", texels, code, first, n)
					got, f, ok := uwRun(t, ls, x, found, words, c, texels)
					if !ok {
						t.Logf("no texel form on this device")
						break
					}
					require.Zero(t, f, name)
					want := uwWant(words, c, inv)
					for i := range want {
						require.Equalf(t, want[i], got[i], "%s: word %d", name, i)
					}
				}
			}
		}
	}
}

// TestLossScaleUnscaleFindsEvery: an inf or NaN in any position of a chunk
// (head, each component of the run, tail) is found, and one just outside
// it, or in the padding half past an odd fp16 count, is not.
func TestLossScaleUnscaleFindsEvery(t *testing.T) {
	ls, x, found := uwSetup(t, 2)
	r := rand.New(rand.NewPCG(3, 4))
	for _, texels := range []bool{false, true} {
		for code := uint32(0); code < 2; code++ {
			base := uwRandom(r, code == 1)
			for first := uint32(1); first <= 4; first++ {
				n := uint32(13)
				if code == 1 {
					n = 27 // 14 words, the last with a padding half
				}
				c := [3]uint32{first, n, code}
				for e := -1; e <= int(n); e++ { // -1 and n: just outside
					words := append([]uint32(nil), base...)
					bad := uint32(0x7F800000) // +inf
					if e%2 == 0 {
						bad = 0xFFC00001 // a NaN
					}
					if code == 0 {
						words[int(first)+e] = bad
					} else {
						h := uint32(0x7C00)
						if e%2 == 0 {
							h = 0xFE01
						}
						i, sh := int(first)+(e+2)/2-1, 16*uint32((e+2)%2)
						words[i] = words[i]&^(0xFFFF<<sh) | h<<sh
						bad = h
					}
					want := float32(1)
					if e < 0 || e >= int(n) {
						want = 0
					}
					_, f, ok := uwRun(t, ls, x, found, words, c, texels)
					if !ok {
						break
					}
					require.Equalf(t, want, f, "texels %v, dtype %d, first word %d, element %d = %#x", texels, code, first, e, bad)
				}
			}
		}
	}
}
