package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestBytes: a tensor's storage as bytes, both ways, and Zero, for both
// dtypes and an odd fp16 length (whose last word is half padding).
func TestBytes(t *testing.T) {
	d := devtest.Open(t)
	v := []float32{1, -2.5, 0.1, float32(math.Inf(-1)), 65504}
	x, held := opInput(t, d, v, tensor.Float32, 5)
	raw, err := x.Bytes()
	require.NoError(t, err)
	require.Len(t, raw, 20)
	for i, f := range held {
		require.Equal(t, math.Float32bits(f), binary.LittleEndian.Uint32(raw[4*i:]))
	}
	h, _ := opInput(t, d, v, tensor.Float16, 5)
	raw16, err := h.Bytes()
	require.NoError(t, err)
	require.Len(t, raw16, 10)
	for i, f := range v {
		require.Equal(t, float16.Fromfloat32(f).Bits(), binary.LittleEndian.Uint16(raw16[2*i:]))
	}

	// SetBytes round-trips, in order with recorded work.
	y := tensor.Zeros(d, tensor.Float32, 5)
	defer y.Release()
	require.NoError(t, y.SetBytes(raw))
	require.Equal(t, opBits(held), opBits(opRead(t, y)))
	g := tensor.Full(d, tensor.Float16, 3, 5)
	defer g.Release()
	require.NoError(t, g.SetBytes(raw16))
	back, err := g.Bytes()
	require.NoError(t, err)
	require.Equal(t, raw16, back)

	for _, z := range []*tensor.Tensor{y, g} {
		require.NoError(t, z.Zero())
		require.Equal(t, make([]float32, 5), opRead(t, z))
	}
	opPanics[*tensor.UsageError](t, "SetBytes short", func() { y.SetBytes(raw[:16]) }, "SetBytes", "16 bytes")
}

// stFailed returns a tensor that carries an error, as one whose memory
// could not be allocated: made on a fresh device whose first allocation
// fails.
func stFailed(t *testing.T, dt tensor.DType, shape ...int) *tensor.Tensor {
	t.Helper()
	d := devtest.Open(t)
	d.InjectFaults(vk.Faults{AllocN: 1})
	x := tensor.New(d, dt, shape...)
	d.InjectFaults(vk.Faults{})
	require.ErrorIs(t, x.Err(), vk.ErrOutOfDeviceMemory)
	return x
}

// TestBytesOfFailed: in-place writes to a tensor that carries an error
// return it and leave it as it was.
func TestBytesOfFailed(t *testing.T) {
	bad := stFailed(t, tensor.Float32, 2)
	require.ErrorIs(t, bad.SetBytes(make([]byte, 8)), vk.ErrOutOfDeviceMemory)
	require.ErrorIs(t, bad.Zero(), vk.ErrOutOfDeviceMemory)
	_, err := bad.Bytes()
	require.ErrorIs(t, err, vk.ErrOutOfDeviceMemory)
}

// TestCopyFrom: a copy in place keeps the destination's memory; a source
// of another dtype or shape panics.
func TestCopyFrom(t *testing.T) {
	d := devtest.Open(t)
	dst, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float32, 3)
	src, held := opInput(t, d, []float32{4, -5, 6.5}, tensor.Float32, 3)
	require.NoError(t, dst.CopyFrom(src))
	require.NoError(t, dst.CopyFrom(dst))
	require.Equal(t, held, opRead(t, dst))
	h, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float16, 3)
	opPanics[*tensor.DTypeError](t, "fp16 source", func() { dst.CopyFrom(h) }, "CopyFrom", "float16")
	two, _ := opInput(t, d, []float32{1, 2}, tensor.Float32, 2)
	opPanics[*tensor.ShapeError](t, "shorter source", func() { dst.CopyFrom(two) }, "CopyFrom", "[3]", "[2]")
}

// TestSetFloat32s: a Float32 tensor's value set from host floats, read
// back as they were; other dtypes and lengths panic.
func TestSetFloat32s(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float32, 3)
	v := []float32{-0.5, float32(math.Inf(1)), 0x1p-140}
	require.NoError(t, x.SetFloat32s(v))
	require.Equal(t, v, opRead(t, x))
	opPanics[*tensor.UsageError](t, "two floats", func() { x.SetFloat32s(v[:2]) }, "SetFloat32s", "2 values for 3 elements")
	h, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float16, 3)
	opPanics[*tensor.DTypeError](t, "fp16 tensor", func() { h.SetFloat32s(v) }, "SetFloat32s", "float16")
}

// TestWriteFloat32s: the floats fill writes are the tensor's value, also
// when recorded work still reads the tensor (the write lands after it).
func TestWriteFloat32s(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float32, 3)
	y := tensor.Scale(x, 2, tensor.Float32) // recorded, reads x's old value
	defer y.Release()
	v := []float32{-0.5, float32(math.Inf(1)), 0x1p-140}
	require.NoError(t, x.WriteFloat32s(func(dst []float32) {
		require.Len(t, dst, 3)
		copy(dst, v)
	}))
	require.Equal(t, v, opRead(t, x))
	require.Equal(t, []float32{2, 4, 6}, opRead(t, y))
	h, _ := opInput(t, d, []float32{1, 2, 3}, tensor.Float16, 3)
	opPanics[*tensor.DTypeError](t, "fp16 tensor", func() { h.WriteFloat32s(func([]float32) {}) }, "WriteFloat32s", "float16")
}

// TestWrite16s: the patterns Encode16 makes and Write16s uploads are the
// bits Cast gives on the device, ties, overflow, subnormals and infinities
// included; recorded work still reads the old value.
func TestWrite16s(t *testing.T) {
	d := devtest.Open(t)
	v := []float32{1, -0.1, 1 + 0x1p-11, 1 + 0x3p-11, 70000, -0x1p-20, 0x1p-25, 0x1.8p-24, float32(math.Inf(-1)),
		3.14159, 1 + 0x1p-8, 1 + 0x3p-8, 0x1p-130, 1e38, -2.5e-3, 0}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			src := tensor.FromFloat32(d, v, len(v))
			defer src.Release()
			want := tensor.Cast(src, dt)
			defer want.Release()
			wantBits, err := want.Bytes()
			require.NoError(t, err)
			x := tensor.Zeros(d, dt, len(v))
			defer x.Release()
			y := tensor.Cast(x, tensor.Float32) // recorded, reads x's old value
			defer y.Release()
			enc := make([]uint16, len(v))
			tensor.Encode16(dt, enc, v)
			require.NoError(t, x.Write16s(func(dst []uint16) {
				require.Len(t, dst, len(v))
				copy(dst, enc)
			}))
			got, err := x.Bytes()
			require.NoError(t, err)
			require.Equal(t, wantBits, got, "Write16s(Encode16) against the device's Cast")
			require.Equal(t, make([]float32, len(v)), opRead(t, y))
		})
	}
	f, _ := opInput(t, d, []float32{1, 2}, tensor.Float32, 2)
	opPanics[*tensor.DTypeError](t, "fp32 tensor", func() { f.Write16s(func([]uint16) {}) }, "Write16s", "float32")
	opPanics[*tensor.DTypeError](t, "fp32 encoding", func() { tensor.Encode16(tensor.Float32, make([]uint16, 1), []float32{1}) }, "Encode16", "float32")
	opPanics[*tensor.UsageError](t, "short dst", func() { tensor.Encode16(tensor.Float16, make([]uint16, 1), []float32{1, 2}) }, "Encode16", "2 values into 1")
}

// TestNewOverBindingRange: a tensor larger than the device's
// maxStorageBufferRange could never be bound by a kernel. New refuses it
// before allocating, with an error the tensor carries naming the limit
// (lavapipe's is 128 MiB: an fp32 8192 x 8192 is 256 MiB).
func TestNewOverBindingRange(t *testing.T) {
	d := devtest.Open(t)
	lim := int64(d.Info().MaxStorageBufferRange)
	rows := 8192
	if 4*8192*8192 <= lim { // a device that binds more: the smallest tensor over it
		rows = int(lim/(4*8192) + 1)
	}
	before := d.Stats()
	x := tensor.New(d, tensor.Float32, rows, 8192)
	defer x.Release()
	require.ErrorContains(t, x.Err(), fmt.Sprintf("float32[%d 8192]", rows))
	if uint64(4*8192*rows) > d.Info().MaxMemoryAllocationSize { // SwiftShader: 1 GiB for both; that limit is said first
		require.ErrorIs(t, x.Err(), vk.ErrOutOfDeviceMemory)
		return
	}
	require.ErrorIs(t, x.Err(), vk.ErrInvalidArgument)
	require.ErrorContains(t, x.Err(), fmt.Sprintf("maxStorageBufferRange of %d bytes", lim))
	t.Logf("New: %v", x.Err())
	after := d.Stats()
	require.Equal(t, before.BufferBytes, after.BufferBytes, "bytes allocated for a tensor refused")
	require.Equal(t, before.LiveBuffers, after.LiveBuffers)
	// Ops on it carry the error; nothing is dispatched.
	y := tensor.Scale(x, 2, tensor.Float32)
	defer y.Release()
	require.ErrorIs(t, y.Err(), vk.ErrInvalidArgument)
}
