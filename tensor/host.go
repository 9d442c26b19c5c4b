package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/vk"
)

// Uploads make a tensor from host values; downloads wait for a tensor's
// value. The bytes on the device are little-endian elements, 16-bit ones two
// per 32-bit word, low half first, on every tier.

// FromFloat32 returns a Float32 tensor holding data.
func FromFloat32(d *vk.Device, data []float32, shape ...int) *Tensor {
	return upload(d, "FromFloat32", Float32, len(data), shape, hostBytes(data), func(raw []byte) {
		for i, v := range data {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	})
}

// FromFloat16 returns a Float16 tensor holding data.
func FromFloat16(d *vk.Device, data []float16.Float16, shape ...int) *Tensor {
	return upload(d, "FromFloat16", Float16, len(data), shape, hostBytes(data), func(raw []byte) {
		for i, v := range data {
			binary.LittleEndian.PutUint16(raw[2*i:], v.Bits())
		}
	})
}

// FromBFloat16 returns a BFloat16 tensor holding bits, each the bfloat16 bit
// pattern of one element: the top 16 bits of a float32 (0x3F80 is 1.0). To
// upload float32 values rounded to bfloat16, Cast a Float32 tensor.
func FromBFloat16(d *vk.Device, bits []uint16, shape ...int) *Tensor {
	return upload(d, "FromBFloat16", BFloat16, len(bits), shape, hostBytes(bits), func(raw []byte) {
		for i, v := range bits {
			binary.LittleEndian.PutUint16(raw[2*i:], v)
		}
	})
}

// FromInt32 returns an Int32 tensor holding data.
func FromInt32(d *vk.Device, data []int32, shape ...int) *Tensor {
	return upload(d, "FromInt32", Int32, len(data), shape, hostBytes(data), func(raw []byte) {
		for i, v := range data {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(v))
		}
	})
}

// littleEndian is whether host memory already holds elements as the device
// bytes do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// hostBytes views s's memory as bytes.
func hostBytes[T float32 | int32 | uint16 | float16.Float16](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// upload makes a tensor of dtype dt and shape holding the n elements that
// put encodes. On a little-endian host, where the encoding is the memory
// itself, it copies native (the data's bytes) instead: a training step's
// input batch then costs one copy and no allocation.
func upload(d *vk.Device, op string, dt DType, n int, shape []int, native []byte, put func(raw []byte)) *Tensor {
	if m := checkShape(op, shape); m != n {
		shapePanic(op, shape, []int{n}, "shape holds %d elements, data %d", m, n)
	}
	t := New(d, dt, shape...)
	if t.err != nil {
		return t
	}
	if littleEndian && int64(len(native)) == dt.bytes(n) {
		t.write(native)
		return t
	}
	raw := make([]byte, dt.bytes(n))
	put(raw)
	t.write(raw)
	return t
}

func (t *Tensor) write(raw []byte) {
	if t.err == nil {
		if err := t.buf.Write(0, raw); err != nil {
			t.err = fmt.Errorf("tensor: upload: %w", err)
		}
	}
}

// Float32s waits for the tensor's value and returns it as float32s: exact
// for Float16 and BFloat16; Int32 values round to nearest even.
func (t *Tensor) Float32s() ([]float32, error) {
	raw, err := t.raw("Float32s")
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.n)
	for i := range out {
		switch t.dtype {
		case Float32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		case Float16:
			out[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		case BFloat16:
			out[i] = bf16value(binary.LittleEndian.Uint16(raw[2*i:]))
		case Int32:
			out[i] = float32(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	}
	return out, nil
}

// Float16s waits for a Float16 tensor's value and returns it. Other dtypes
// panic with a *DTypeError.
func (t *Tensor) Float16s() ([]float16.Float16, error) {
	bits, err := t.bits16("Float16s", Float16)
	if err != nil {
		return nil, err
	}
	out := make([]float16.Float16, len(bits))
	for i, b := range bits {
		out[i] = float16.Frombits(b)
	}
	return out, nil
}

// BFloat16Bits waits for a BFloat16 tensor's value and returns the bit
// pattern of each element (the top 16 bits of a float32). Other dtypes
// panic with a *DTypeError.
func (t *Tensor) BFloat16Bits() ([]uint16, error) { return t.bits16("BFloat16Bits", BFloat16) }

// Int32s waits for an Int32 tensor's value and returns it. Other dtypes
// panic with a *DTypeError.
func (t *Tensor) Int32s() ([]int32, error) {
	if t.dtype != Int32 {
		panic(&DTypeError{Op: "Int32s", Got: t.dtype, Want: "int32"})
	}
	raw, err := t.raw("Int32s")
	if err != nil {
		return nil, err
	}
	out := make([]int32, t.n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}

func (t *Tensor) bits16(op string, dt DType) ([]uint16, error) {
	if t.dtype != dt {
		panic(&DTypeError{Op: op, Got: t.dtype, Want: dt.String()})
	}
	raw, err := t.raw(op)
	if err != nil {
		return nil, err
	}
	out := make([]uint16, t.n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return out, nil
}

// Item waits for a one-element tensor's value, converted as Float32s does.
func (t *Tensor) Item() (float32, error) {
	if t.n != 1 {
		shapePanic("Item", t.shape, []int{1}, "not a one-element tensor")
	}
	v, err := t.Float32s()
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (t *Tensor) raw(op string) ([]byte, error) {
	t.live(op)
	if t.err != nil {
		return nil, t.err
	}
	raw := make([]byte, t.dtype.bytes(t.n))
	if err := t.buf.Read(0, raw); err != nil {
		return nil, fmt.Errorf("tensor: read %s%v: %w", t.dtype, t.shape, err)
	}
	if err := checkAsserts(t.dev); err != nil {
		return nil, err
	}
	return raw, nil
}
