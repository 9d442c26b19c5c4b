package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// optVecCounts are element counts of the chunks of TestOptimizerVec4Offsets:
// none, one, two or three past a multiple of 4.
var optVecCounts = []int{1, 3, 6, 8, 1027, 2050}

// optVecShifts are word shifts of the parameter, gradient, two moments and
// half copy per copy of a chunk's data: the first is aligned (vec4
// accesses), the next two are not (word by word), the last shifts only the
// half copy (vec4 accesses, its halves stored from an odd word).
var optVecShifts = [][5]int{{0, 0, 0, 0, 0}, {1, 2, 3, 1, 0}, {0, 0, 0, 2, 0}, {0, 0, 0, 0, 1}}

// TestOptimizerVec4Offsets: the optimizer kernels update a chunk whose word
// offsets are multiples of 4 (the half copy's may be any word) four
// elements at a time with vector accesses, any other chunk word by word:
// both give the same bits, with counts that are not multiples of 4.
// One dispatch updates copies of the same data at aligned and misaligned
// offsets, which must end equal. With the VEC4 constant false (SwiftShader's
// setting) every chunk goes word by word, and the bits must not change;
// nor must they with the texel forms (adam_tex, sgd_tex, adadelta_tex,
// lavapipe's), run here on every device with shaderInt64, which they need
// for their 64-bit stores, as every texel form does; nor with Adam or SGD
// unscaling the gradients as they read them (the -unscale kinds). Every
// other chunk has no half copy, and the words around the chunks are not
// zero (optVecPad), so a copy or an update written where none belongs
// shows.
func TestOptimizerVec4Offsets(t *testing.T) {
	kinds := []string{"adam", "adamw", "adam-f16", "adam-bf16", "adam-unscale", "sgd", "sgd-nesterov", "sgd-plain", "sgd-unscale", "adadelta"}
	for _, det := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{Deterministic: det})
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/deterministic=%t", kind, det), func(t *testing.T) {
				vec := optVecCheck(t, d, kind, optVec4)
				others := map[optVecMode]string{optWords: "every chunk goes word by word"}
				if d.Info().ShaderInt64 {
					others[optTexels] = "the texel form reads them"
				}
				for mode, what := range others {
					got := optVecCheck(t, d, kind, mode)
					for b := range vec {
						if !bytes.Equal(vec[b], got[b]) {
							t.Errorf("buffer %d differs when %s", b, what)
						}
					}
				}
			})
		}
	}
}

// optVecMode is how optVecCheck runs the optimizer kernel.
type optVecMode int

const (
	optVec4   optVecMode = iota // the VEC4 constant true
	optWords                    // the VEC4 constant false
	optTexels                   // VEC4 true, the texel form
)

// optVecPad is the word every buffer holds outside the chunks' data, and
// the half copies of chunks without one: an update or a copy written
// where none belongs changes it (zeros would stay zeros under Adam).
const optVecPad = 0x3FC00000 // 1.5

// optVecHasCopy reports whether chunk c (of optVecCounts) has a half copy
// in the kinds that write them: every other one, so that one dispatch
// makes chunks of both kinds.
func optVecHasCopy(c int) bool { return c%2 == 0 }

// optVecCheck runs the check in the given mode and returns the bytes of
// the five buffers after the step.
func optVecCheck(t *testing.T, d *vk.Device, kind string, mode optVecMode) [5][]byte {
	wordwise := mode == optWords
	halves := kind == "adam-f16" || kind == "adam-bf16"
	rng := rand.New(rand.NewPCG(7, uint64(len(kind))))
	stride := 0 // words per copy of a chunk's data, aligned
	for _, n := range optVecCounts {
		stride = max(stride, (n+3)/4*4+8)
	}
	nc := len(optVecCounts) * len(optVecShifts)
	words := stride * nc
	// host[b]: the words of buffers param, grad, m1, m2, half copy.
	var host [5][]uint32
	for b := range host {
		host[b] = make([]uint32, words)
		for i := range host[b] {
			host[b][i] = optVecPad
		}
	}
	var table []byte
	at := func(c, v, b int) int { return (c*len(optVecShifts)+v)*stride + optVecShifts[v][b] }
	for c, n := range optVecCounts {
		data := make([][]float32, 4)
		for b := range data {
			for range n {
				x := float32(rng.NormFloat64())
				if b == 3 || (b == 2 && kind == "adadelta") { // averages of squares
					x = x * x
				}
				data[b] = append(data[b], x)
			}
		}
		for v := range optVecShifts {
			for b := range data {
				for i, x := range data[b] {
					host[b][at(c, v, b)+i] = math.Float32bits(x)
				}
			}
			for b := range 4 {
				table = binary.LittleEndian.AppendUint32(table, uint32(at(c, v, b)))
			}
			for i := range (n + 1) / 2 {
				if optVecHasCopy(c) {
					host[4][at(c, v, 4)+i] = 0
				}
			}
			for _, w := range []int{n, at(c, v, 4), int(boolWord(optVecHasCopy(c))), 0} {
				table = binary.LittleEndian.AppendUint32(table, uint32(w))
			}
		}
	}
	var bufs [5]*Tensor
	for b := range bufs {
		bufs[b] = Zeros(d, Float32, words)
		t.Cleanup(bufs[b].Release)
		raw := make([]byte, 0, 4*words)
		for _, w := range host[b] {
			raw = binary.LittleEndian.AppendUint32(raw, w)
		}
		require.NoError(t, bufs[b].SetBytes(raw))
	}
	found, steps := Zeros(d, Float32, 1), Zeros(d, Float32, 1)
	t.Cleanup(found.Release)
	t.Cleanup(steps.Release)
	require.NoError(t, steps.SetBytes(binary.LittleEndian.AppendUint32(nil, 2)))
	tb, err := uploadTable(d, table)
	require.NoError(t, err)
	t.Cleanup(func() { tb.Free() })
	grid := [3]uint32{uint32(nc), 1, 1}
	// The -unscale kinds multiply the gradients by a loss scale's inverse
	// (words: scale 3, inverse 0.1, not a power of 2) as they read them.
	scale := Zeros(d, Float32, 2)
	t.Cleanup(scale.Release)
	require.NoError(t, scale.SetBytes(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil,
		math.Float32bits(3)), math.Float32bits(0.1))))
	p, g, m, v, h := bufs[0].buf, bufs[1].buf, bufs[2].buf, bufs[3].buf, bufs[4].buf
	if mode == optTexels {
		require.True(t, p.TexelsFit() && g.TexelsFit() && m.TexelsFit() && v.TexelsFit(), "the buffers fit texel views")
	}
	switch kind {
	case "adam", "adamw", "adam-f16", "adam-bf16", "adam-unscale":
		spec := kernels.AdamSpec{Vec4: !wordwise, Unscale: kind == "adam-unscale"}
		if kind == "adam-f16" {
			spec.HalfDT = Float16.code()
		} else if kind == "adam-bf16" {
			spec.HalfDT = BFloat16.code()
		}
		push := kernels.AdamPush{Nchunks: uint32(nc), Lr: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: boolWord(kind == "adamw")}
		b := kernels.AdamBind{P: p, G: g, M: m, Table: tb, Found: found.buf, Steps: steps.buf, V: v, H: h, Lr: steps.buf, ScaleState: scale.buf}
		if mode == optTexels {
			err = kernels.AdamTex(d, grid, kernels.AdamTexSpec(spec), kernels.AdamTexPush(push), kernels.AdamTexBind{
				P: p, G: g, M: m, Table: tb, Found: found.buf, Steps: steps.buf, V: v, H: h, Lr: steps.buf, ScaleState: scale.buf,
				ParamTex: p, GradTex: g, M1Tex: m, M2Tex: v})
		} else {
			err = kernels.Adam(d, grid, spec, push, b)
		}
	case "sgd", "sgd-nesterov", "sgd-plain", "sgd-unscale":
		push := kernels.SgdPush{Nchunks: uint32(nc), Lr: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01, Nesterov: boolWord(kind == "sgd-nesterov")}
		if kind == "sgd-plain" {
			push.Momentum, push.Dampening = 0, 0
		}
		spec := kernels.SgdSpec{Vec4: !wordwise, Unscale: kind == "sgd-unscale"}
		if mode == optTexels {
			err = kernels.SgdTex(d, grid, kernels.SgdTexSpec(spec), kernels.SgdTexPush(push), kernels.SgdTexBind{
				P: p, G: g, M: m, Table: tb, Found: found.buf, Steps: steps.buf, Lr: steps.buf, ScaleState: scale.buf, ParamTex: p, GradTex: g, M1Tex: m})
		} else {
			err = kernels.Sgd(d, grid, spec, push, kernels.SgdBind{P: p, G: g, M: m, Table: tb, Found: found.buf, Steps: steps.buf, Lr: steps.buf, ScaleState: scale.buf})
		}
	case "adadelta":
		push := kernels.AdadeltaPush{Nchunks: uint32(nc), Lr: 1, Rho: 0.9, Eps: 1e-6, WeightDecay: 0.01}
		spec := kernels.AdadeltaSpec{Vec4: !wordwise}
		if mode == optTexels {
			err = kernels.AdadeltaTex(d, grid, kernels.AdadeltaTexSpec(spec), kernels.AdadeltaTexPush(push), kernels.AdadeltaTexBind{
				P: p, G: g, M: m, Table: tb, Found: found.buf, V: v, Lr: steps.buf, ParamTex: p, GradTex: g, M1Tex: m, M2Tex: v})
		} else {
			err = kernels.Adadelta(d, grid, spec, push, kernels.AdadeltaBind{P: p, G: g, M: m, Table: tb, Found: found.buf, V: v, Lr: steps.buf})
		}
	}
	require.NoError(t, err)
	names := []string{"weights", "gradients", "first moments", "second moments", "half copies"}
	var out [5][]byte
	for b, x := range bufs {
		raw, err := x.Bytes()
		require.NoError(t, err)
		out[b] = raw
		for c, n := range optVecCounts {
			nw := n
			if b == 4 {
				nw = (n + 1) / 2
			}
			want := raw[4*at(c, 0, b) : 4*(at(c, 0, b)+nw)]
			if b == 0 && bytes.Equal(want, optVecBytes(host[0][at(c, 0, 0):at(c, 0, 0)+n])) {
				t.Fatalf("%d elements: the step left the weights as they were", n)
			}
			if b == 4 && halves && optVecHasCopy(c) && bytes.Count(want, []byte{0}) == len(want) {
				t.Fatalf("%d elements: no half copy written", n)
			}
			if b == 4 && !optVecHasCopy(c) && !bytes.Equal(want, optVecBytes(host[4][at(c, 0, 4):at(c, 0, 4)+nw])) {
				t.Fatalf("%d elements: a half copy written for a chunk without one", n)
			}
			for v := 1; v < len(optVecShifts); v++ {
				if got := raw[4*at(c, v, b) : 4*(at(c, v, b)+nw)]; !bytes.Equal(got, want) {
					t.Errorf("%d elements, shifts %v: %s differ from the aligned copy's", n, optVecShifts[v], names[b])
				}
			}
		}
	}
	return out
}

func optVecBytes(w []uint32) []byte {
	var b []byte
	for _, x := range w {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}
