package tensor

import (
	"fmt"
	"math"
	"slices"
	"sync"

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
	dims  [4]int    // shape's storage up to rank 4: one allocation less per tensor
	mem   vk.Buffer // buf's storage for a tensor New allocated: one allocation less

	mu       sync.Mutex
	released bool
}

func checkShape(op string, shape []int) int {
	n := 1
	// The panics format a copy, so that shape does not escape: a caller's
	// variadic shape then stays on its stack.
	for _, s := range shape {
		if s <= 0 {
			usagePanic(op, "shape %v has a dimension < 1", slices.Clone(shape))
		}
		if n > math.MaxInt32/s {
			usagePanic(op, "shape %v has more than 2^31 elements", slices.Clone(shape))
		}
		n *= s
	}
	return n
}

// New returns a tensor with undefined contents. A tensor larger than the
// device's maxStorageBufferRange, which no kernel could bind, is refused
// before anything is allocated: it carries an error naming the limit that
// matches vk.ErrInvalidArgument, as one whose allocation failed carries
// that failure (vk.ErrOutOfDeviceMemory, also over the allocation limit).
func New(d *vk.Device, dt DType, shape ...int) *Tensor {
	if d == nil {
		usagePanic("New", "nil device")
	}
	if !dt.valid() {
		panic(&DTypeError{Op: "New", Got: dt, Want: "float32, float16, bfloat16 or int32"})
	}
	n := checkShape("New", shape)
	t := &Tensor{dev: d, dtype: dt, n: n}
	if len(shape) <= len(t.dims) {
		t.shape = t.dims[:len(shape):len(shape)] // capped: an append copies
		copy(t.shape, shape)
	} else {
		t.shape = slices.Clone(shape)
	}
	size := dt.bytes(n)
	// A binding covers the allocation, rounded up to the alignment. Over the
	// allocation limit too, the allocation's error comes first.
	info, a := d.Info(), d.Alignment()
	if lim := int64(info.MaxStorageBufferRange); (size+a-1)/a*a > lim && uint64(size) <= info.MaxMemoryAllocationSize {
		t.err = fmt.Errorf("tensor: new %s%v: %d bytes, over the device's maxStorageBufferRange of %d bytes (%d MiB), "+
			"the most one kernel binding can reach: %w", dt, t.shape, size, lim, lim>>20, vk.ErrInvalidArgument)
		return t
	}
	if err := d.AllocIn(&t.mem, size); err != nil {
		t.err = fmt.Errorf("tensor: new %s%v: %w", dt, t.shape, err)
		return t
	}
	t.buf = &t.mem
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

// SameShape reports whether a and b have the same shape, without the copies
// Shape makes (a check on every op of a step).
func SameShape(a, b *Tensor) bool { return slices.Equal(a.shape, b.shape) }

// Len returns the number of elements.
func (t *Tensor) Len() int { return t.n }

func (t *Tensor) String() string { return fmt.Sprintf("Tensor(%s%v)", t.dtype, t.shape) }
