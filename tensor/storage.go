package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// A tensor's storage as bytes, for files and tests: the elements row-major
// and little-endian, Len()*DType().Size() bytes (fp16 as its 16-bit
// pattern), as safetensors files hold them.

// Bytes waits for the tensor's value and returns its storage.
func (t *Tensor) Bytes() ([]byte, error) {
	raw, err := t.raw("Bytes")
	if err != nil {
		return nil, err
	}
	return raw[:t.n*t.dtype.Size()], nil
}

// SetBytes overwrites the tensor's value with data, its storage as Bytes
// returns it, in order with the work already recorded. It panics unless
// data holds exactly Len()*DType().Size() bytes. It is an in-place update:
// it returns the error the tensor carries, or the failure, and never makes
// the tensor carry one.
func (t *Tensor) SetBytes(data []byte) error {
	t.live("SetBytes")
	if want := t.n * t.dtype.Size(); len(data) != want {
		usagePanic("SetBytes", "%d bytes for %d elements of %s (%d bytes)", len(data), t.n, t.dtype, want)
	}
	if t.err != nil {
		return t.err
	}
	if err := t.buf.Write(0, data); err != nil {
		return fmt.Errorf("tensor: set bytes of %s%v: %w", t.dtype, t.shape, err)
	}
	return nil
}

// SetFloat32s overwrites a Float32 tensor's value with data, as SetBytes
// does with its little-endian bytes: on a little-endian host data's own
// memory is written, with no encoding or allocation (a training step's
// input batch). It panics with a *DTypeError for other dtypes and unless
// data holds Len() elements.
func (t *Tensor) SetFloat32s(data []float32) error {
	if t.dtype != Float32 {
		panic(&DTypeError{Op: "SetFloat32s", Got: t.dtype, Want: "float32"})
	}
	if len(data) != t.n {
		usagePanic("SetFloat32s", "%d values for %d elements", len(data), t.n)
	}
	if littleEndian {
		return t.SetBytes(hostBytes(data))
	}
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return t.SetBytes(raw)
}

// WriteFloat32s overwrites a Float32 tensor's value with the Len() floats
// fill writes, as SetFloat32s does with a slice: on a little-endian host
// fill writes the tensor's own memory when the device does not use it, or
// the staging memory its upload copies from, so that a batch gathered on
// the host is written once, not gathered and then copied. fill must write
// every element (the old contents are undefined) and must not call the
// device. It panics with a *DTypeError for other dtypes.
func (t *Tensor) WriteFloat32s(fill func(dst []float32)) error {
	if t.dtype != Float32 {
		panic(&DTypeError{Op: "WriteFloat32s", Got: t.dtype, Want: "float32"})
	}
	return writeElems(t, "WriteFloat32s", fill, func(b []byte, v float32) {
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	})
}

// Write16s overwrites a Float16 or BFloat16 tensor's value with the Len()
// 16-bit patterns fill writes (Encode16 makes them), as WriteFloat32s does
// for a Float32 tensor: a batch gathered from a dataset encoded once, which
// the device then neither casts nor reads at twice the size. It panics
// with a *DTypeError for other dtypes.
func (t *Tensor) Write16s(fill func(dst []uint16)) error {
	if t.dtype != Float16 && t.dtype != BFloat16 {
		panic(&DTypeError{Op: "Write16s", Got: t.dtype, Want: "float16 or bfloat16"})
	}
	return writeElems(t, "Write16s", fill, binary.LittleEndian.PutUint16)
}

// writeElems has fill write t's Len() elements, each the element's whole
// storage: in place on a little-endian host (the tensor's memory, or its
// upload's), else into a slice that put encodes for SetBytes.
func writeElems[T uint16 | float32](t *Tensor, op string, fill func(dst []T), put func(b []byte, v T)) error {
	t.live(op)
	if t.err != nil {
		return t.err
	}
	size := int(unsafe.Sizeof(T(0)))
	if !littleEndian {
		data := make([]T, t.n)
		fill(data)
		raw := make([]byte, size*t.n)
		for i, v := range data {
			put(raw[size*i:], v)
		}
		return t.SetBytes(raw)
	}
	err := t.buf.WriteWith(0, int64(size*t.n), func(b []byte) {
		fill(unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), t.n))
	})
	if err != nil {
		return fmt.Errorf("tensor: %s of %s%v: %w", op, t.dtype, t.shape, err)
	}
	return nil
}

// Zero sets every element to zero in place, keeping the tensor's memory (a
// gradient before a step's backward pass). It records a fill, no kernel,
// and returns failures instead of making the tensor carry them.
func (t *Tensor) Zero() error {
	t.live("Zero")
	if t.err != nil {
		return t.err
	}
	if err := t.dev.Fill(t.buf, 0, t.dtype.bytes(t.n), 0); err != nil {
		return fmt.Errorf("tensor: zero %s%v: %w", t.dtype, t.shape, err)
	}
	return nil
}

// CopyFrom overwrites the tensor's value with src's, in order with the work
// already recorded, keeping the tensor's memory (a weight set from another
// tensor). src must have the tensor's dtype and shape, on its device: else
// it panics. It is an in-place update: it returns the error src or the
// tensor carries, or the failure, and never makes the tensor carry one.
func (t *Tensor) CopyFrom(src *Tensor) error {
	const op = "CopyFrom"
	sameDevice(op, t, src)
	if src.dtype != t.dtype {
		panic(&DTypeError{Op: op, Got: src.dtype, Want: t.dtype.String() + ", the destination's"})
	}
	if !equalShape(t.shape, src.shape) {
		shapePanic(op, t.shape, src.shape, "destination and source differ")
	}
	if err := firstErr(src, t); err != nil {
		return err
	}
	if src == t {
		return nil
	}
	return opErr(op, t.dev.Copy(t.buf, 0, src.buf, 0, t.dtype.bytes(t.n)))
}
