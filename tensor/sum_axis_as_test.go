package tensor_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestSumAxisAs: SumAxisAs stores the sums in the dtype asked for, bit for
// bit Cast(SumAxis(x, axis), dt), padding half included, over middle and
// last axes, odd and even output counts, every input dtype, with sums that
// overflow fp16, NaN and infinities; in the default and deterministic
// modes.
func TestSumAxisAs(t *testing.T) {
	cases := []struct {
		shape []int
		axis  int
	}{
		{[]int{64, 256}, 0}, // a Linear's bias gradient
		{[]int{5, 7, 3}, 1}, // 15 outputs: an odd count of halves
		{[]int{3, 1}, 0},    // one output
		{[]int{2, 3, 5}, 0},
		{[]int{4, 9}, 1}, // the last axis: the row kernel, then a cast
	}
	for _, det := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{Deterministic: det})
		for _, c := range cases {
			for _, in := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16} {
				for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16} {
					name := fmt.Sprintf("deterministic=%t/%v/axis%d/%v-%v", det, c.shape, c.axis, in, dt)
					t.Run(name, func(t *testing.T) { sumAxisAsCheck(t, d, c.shape, c.axis, in, dt) })
				}
			}
		}
	}
}

func sumAxisAsCheck(t *testing.T, d *vk.Device, shape []int, axis int, in, dt tensor.DType) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(axis)))
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
		switch rng.IntN(16) {
		case 0:
			data[i] *= 3e4 // sums past fp16's 65504
		case 1:
			data[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 2:
			data[i] = float32(math.NaN())
		}
	}
	f := tensor.FromFloat32(d, data, shape...)
	defer f.Release()
	x := tensor.Cast(f, in)
	defer x.Release()
	got := tensor.SumAxisAs(x, axis, dt)
	defer got.Release()
	if got.DType() != dt {
		t.Fatalf("dtype %v, want %v", got.DType(), dt)
	}
	sum := tensor.SumAxis(x, axis)
	defer sum.Release()
	want := tensor.Cast(sum, dt)
	defer want.Release()
	gb, err := got.RawBytes()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := want.RawBytes()
	if err != nil {
		t.Fatal(err)
	}
	if !sameBitsOrNaN(gb, wb, dt) {
		t.Errorf("shape %v: bytes % x, want those of the cast % x", got.Shape(), gb, wb)
	}
}

// sameBitsOrNaN reports whether raw elements of dt are the same bits, or
// both NaN: the sign of the NaN that inf - inf gives, and which NaN an
// addition of two passes on, are the CPU's (x86's default NaN is negative)
// and the order the driver's compiler picks for one kernel variant or
// another (on an Intel Xeon, lavapipe's fp16-in bf16-out column sum gave
// -NaN where the fp32 one gave +NaN), not vkamp's to fix.
func sameBitsOrNaN(a, b []byte, dt tensor.DType) bool {
	if len(a) != len(b) {
		return false
	}
	size := 2
	if dt == tensor.Float32 {
		size = 4
	}
	for i := 0; i+size <= len(a); i += size {
		x, y := a[i:i+size], b[i:i+size]
		if !bytes.Equal(x, y) && !(rawNaN(x, dt) && rawNaN(y, dt)) {
			return false
		}
	}
	return true
}

// rawNaN reports whether the little-endian element e of dt is a NaN.
func rawNaN(e []byte, dt tensor.DType) bool {
	switch dt {
	case tensor.Float32:
		return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(e))))
	case tensor.Float16:
		h := binary.LittleEndian.Uint16(e)
		return h&0x7C00 == 0x7C00 && h&0x3FF != 0
	default: // bfloat16
		h := binary.LittleEndian.Uint16(e)
		return h&0x7F80 == 0x7F80 && h&0x7F != 0
	}
}

// TestSumAxisAsInt32 panics: the sums of an integer dtype would be
// truncated silently.
func TestSumAxisAsInt32(t *testing.T) {
	d := devtest.Open(t)
	x := tensor.Zeros(d, tensor.Float32, 2, 3)
	defer x.Release()
	defer func() {
		var e *tensor.DTypeError
		if r := recover(); r == nil {
			t.Fatal("no panic")
		} else if err, ok := r.(error); !ok || !errors.As(err, &e) || e.Op != "SumAxisAs" {
			t.Fatalf("panic %v, want a *tensor.DTypeError of SumAxisAs", r)
		}
	}()
	tensor.SumAxisAs(x, 0, tensor.Int32)
}
