package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestCastTails casts every length from 1 to 40 and some past 1024 (the
// texel forms, on CPU drivers, store a partial last block of 8 elements
// word by word) between fp32 and the 16-bit floats both ways, and copies
// fp32 and int32, bit for bit.
func TestCastTails(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var sizes []int
	for n := 1; n <= 40; n++ {
		sizes = append(sizes, n)
	}
	// Past a workgroup, the texel forms hand each subgroup one span of
	// blocks (SPAN_STRIDE): on a grid of a few workgroups these sizes
	// leave spans empty or end one part way, and the largest loops over
	// many blocks per invocation.
	sizes = append(sizes, 1027, 1028, 1029, 1035, 8*(2*64+3)+1, 8*(128*64+1), 8*(2*128*64+100)+3)
	for _, n := range sizes {
		in := make([]uint32, n)
		ints := make([]int32, n)
		for i := range in {
			in[i] = math.Float32bits(float32(rng.NormFloat64() * 100))
			if i%5 == 3 {
				in[i] = rng.Uint32() // any pattern: NaNs, infinities, subnormals
			}
			ints[i] = int32(rng.Uint32())
		}
		x := castFromBits(t, d, in)
		what := fmt.Sprintf("n=%d", n)
		require.Equal(t, in, castBits32(t, x), "%s: fp32 copy", what)
		castCheck16(t, what+" f32 -> f16", in, castBits16(t, x, tensor.Float16), castF16Want)
		bf := func(x uint32) uint16 { return ref.F32ToBF16(math.Float32frombits(x)) }
		castCheck16(t, what+" f32 -> bf16", in, castBits16(t, x, tensor.BFloat16), bf)

		h := castKeep(t, tensor.Cast(x, tensor.Float16))
		wide := castBits32(t, h)
		castCheck16(t, what+" f16 -> f32 -> f16", in, castBits16(t, castFromBits(t, d, wide), tensor.Float16), castF16Want)
		for i, w := range wide {
			if v := math.Float32frombits(w); !math.IsNaN(float64(v)) {
				require.Equal(t, float16bits32(castF16Want(in[i])), w, "%s: f16 -> f32 of element %d", what, i)
			}
		}
		b := castKeep(t, tensor.Cast(x, tensor.BFloat16))
		for i, w := range castBits32(t, b) {
			require.Equal(t, uint32(bf(in[i]))<<16, w, "%s: bf16 -> f32 of element %d", what, i)
		}

		xi := castKeep(t, tensor.FromInt32(d, ints, n))
		yi := castKeep(t, tensor.Cast(xi, tensor.Int32))
		got, err := yi.Int32s()
		require.NoError(t, err)
		require.Equal(t, ints, got, "%s: int32 copy", what)
	}
}

// float16bits32 is the fp32 bits of the fp16 value with bits h.
func float16bits32(h uint16) uint32 {
	return math.Float32bits(float16.Frombits(h).Float32())
}
