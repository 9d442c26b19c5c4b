package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/vk"
)

// Tensor is a dense, row-major array on one device. Ops record work and
// return at once; reading values waits for it.
//
// A tensor that could not be made (allocation failed, the device was lost)
// carries its error instead of memory; every tensor computed from it carries
// the same error, and reading any of them returns it. Release a tensor when
// done with it, or track it in a Scope.
type Tensor struct {
	dev   *vk.Device
	buf   *vk.Buffer // nil when err != nil or released
	dtype DType
	shape []int
	n     int
	err   error

	mu       sync.Mutex
	released bool
}

func checkShape(op string, shape []int) int {
	n := 1
	for _, s := range shape {
		if s <= 0 {
			usagePanic(op, "shape %v has a dimension < 1", shape)
		}
		if n > math.MaxInt32/s {
			usagePanic(op, "shape %v has more than 2^31 elements", shape)
		}
		n *= s
	}
	return n
}

// New returns a tensor with undefined contents.
func New(d *vk.Device, dt DType, shape ...int) *Tensor {
	if d == nil {
		usagePanic("New", "nil device")
	}
	if !dt.supported() {
		panic(&DTypeError{Op: "New", Got: dt, Want: "float32 or float16"})
	}
	n := checkShape("New", shape)
	t := &Tensor{dev: d, dtype: dt, shape: slices.Clone(shape), n: n}
	t.buf, t.err = d.Alloc(dt.bytes(n))
	if t.err != nil {
		t.err = fmt.Errorf("tensor: new %s%v: %w", dt, shape, t.err)
	}
	return t
}

// newLike returns an output tensor for an op, inheriting the first error of
// its inputs instead of allocating when there is one.
func newOut(d *vk.Device, dt DType, shape []int, inputs ...*Tensor) *Tensor {
	for _, in := range inputs {
		if in != nil && in.err != nil {
			return &Tensor{dev: d, dtype: dt, shape: slices.Clone(shape), n: checkShape("op", shape), err: in.err}
		}
	}
	return New(d, dt, shape...)
}

// FromFloat32 returns a Float32 tensor holding data.
func FromFloat32(d *vk.Device, data []float32, shape ...int) *Tensor {
	if n := checkShape("FromFloat32", shape); n != len(data) {
		shapePanic("FromFloat32", shape, []int{len(data)}, "shape holds %d elements, data %d", n, len(data))
	}
	t := New(d, Float32, shape...)
	raw := make([]byte, Float32.bytes(len(data)))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	t.write(raw)
	return t
}

// FromFloat16 returns a Float16 tensor holding data.
func FromFloat16(d *vk.Device, data []float16.Float16, shape ...int) *Tensor {
	if n := checkShape("FromFloat16", shape); n != len(data) {
		shapePanic("FromFloat16", shape, []int{len(data)}, "shape holds %d elements, data %d", n, len(data))
	}
	t := New(d, Float16, shape...)
	raw := make([]byte, Float16.bytes(len(data)))
	for i, v := range data {
		binary.LittleEndian.PutUint16(raw[2*i:], v.Bits())
	}
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

// Float32s waits for the tensor's value and returns it as float32s (fp16
// values convert exactly).
func (t *Tensor) Float32s() ([]float32, error) {
	raw, err := t.raw("Float32s")
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.n)
	if t.dtype == Float32 {
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	} else {
		for i := range out {
			out[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	}
	return out, nil
}

// Float16s waits for a Float16 tensor's value and returns it.
func (t *Tensor) Float16s() ([]float16.Float16, error) {
	if t.dtype != Float16 {
		panic(&DTypeError{Op: "Float16s", Got: t.dtype, Want: "float16"})
	}
	raw, err := t.raw("Float16s")
	if err != nil {
		return nil, err
	}
	out := make([]float16.Float16, t.n)
	for i := range out {
		out[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return out, nil
}

// Item waits for a one-element tensor's value.
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
	return raw, nil
}

// live panics if t is nil or released.
func (t *Tensor) live(op string) {
	if t == nil {
		usagePanic(op, "nil tensor")
	}
	t.mu.Lock()
	released := t.released
	t.mu.Unlock()
	if released {
		usagePanic(op, "tensor %s%v was released", t.dtype, t.shape)
	}
}

// Err returns the error the tensor carries, if any, without waiting.
func (t *Tensor) Err() error { return t.err }

// Release frees the tensor's device memory. Work already recorded that uses
// it still completes. Release is idempotent.
func (t *Tensor) Release() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	if t.buf != nil {
		t.buf.Free()
		t.buf = nil
	}
}

// Device returns the device the tensor lives on.
func (t *Tensor) Device() *vk.Device { return t.dev }

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Shape returns a copy of the shape.
func (t *Tensor) Shape() []int { return slices.Clone(t.shape) }

// Len returns the number of elements.
func (t *Tensor) Len() int { return t.n }

func (t *Tensor) String() string { return fmt.Sprintf("Tensor(%s%v)", t.dtype, t.shape) }
