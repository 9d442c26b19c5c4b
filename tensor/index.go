package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// IndexSelect returns the rows of x picked by idx: x has shape [N, ...] and
// a floating dtype, idx is an Int32 tensor of shape [M], and the result has
// shape [M, ...] and x's dtype, with row i a bit-exact copy of row idx[i] of
// x (an embedding lookup's forward). An index outside [0, N), negative
// ones included, gives a row of quiet NaN instead of reading other memory
// and raises the device's assert: the next read of any tensor on the
// device returns an *AssertError matching ErrBadIndex that names the
// index's row, and until then optimizer steps without a skip flag of their
// own are skipped (see AssertError). A scalar x (rank 0) panics with a
// *ShapeError, a 2-D idx too, and an Int32 x or a floating idx with a
// *DTypeError.
func IndexSelect(x, idx *Tensor) *Tensor {
	const op = "IndexSelect"
	sameDevice(op, x, idx)
	if len(x.shape) == 0 {
		shapePanic(op, x.shape, idx.shape, "x has no rows to select")
	}
	if len(idx.shape) != 1 {
		shapePanic(op, x.shape, idx.shape, "idx must be 1-D")
	}
	if !x.dtype.floating() {
		panic(&DTypeError{Op: op, Got: x.dtype, Want: wantFloating + " x"})
	}
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	return selectRows(op, assertIndexSelect, x, idx, append([]int{idx.n}, x.shape[1:]...))
}

// selectRows records index_select of x's rows by idx into a new tensor of
// shape, which holds len(idx) rows of x; a bad index raises the assert as
// code.
func selectRows(op string, code uint32, x, idx *Tensor, shape []int) *Tensor {
	rows := x.shape[0]
	cols := x.n / rows
	out := newOut(x.dev, x.dtype, shape, x, idx)
	if out.err != nil {
		return out
	}
	if tex := cols * x.dtype.Size() / 16; cols*x.dtype.Size()%16 == 0 && texelsOn(out, x) {
		// Rows of whole texels, read as texels on CPU drivers: on
		// lavapipe a batch of 64 MNIST rows (784) took 0.26-0.33 ms
		// against 1.1-1.4 ms in fp16, 0.53-0.90 against 1.1-1.5 ms in
		// fp32 (kernel timestamps, a loaded machine, alternated).
		n := out.n * x.dtype.Size() / 16
		p := kernels.IndexSelectPush{N: uint32(n), Cols: uint32(tex), Rows: uint32(rows)}
		recordInto(op, func() error {
			return withAssert(out.dev, func(rec *vk.Buffer) error {
				return kernels.IndexSelectForms.Texel(out.dev, texGrid(out, n), kernels.IndexSelectSpec{In0DT: x.dtype.code(), AssertOp: code}, p,
					kernels.IndexSelectBind{X: x.buf, Idx: idx.buf, D: out.buf, Assert: rec})
			})
		}, out)
		return out
	}
	p := kernels.IndexSelectPush{N: uint32(out.n), Cols: uint32(cols), Rows: uint32(rows)}
	recordInto(op, func() error {
		return withAssert(out.dev, func(rec *vk.Buffer) error {
			return kernels.IndexSelectForms.Plain(out.dev, pairs(out), kernels.IndexSelectSpec{In0DT: x.dtype.code(), AssertOp: code}, p,
				kernels.IndexSelectBind{X: x.buf, Idx: idx.buf, D: out.buf, Assert: rec})
		})
	}, out)
	return out
}

// OneHot returns idx (Int32, any shape [...]) one-hot encoded over classes:
// a tensor [..., classes] of dtype out whose row r holds 1 at idx[r] and 0
// elsewhere, as PyTorch's one_hot(idx, classes). out is Int32 (PyTorch's
// int64, in vkamp's index dtype) or a floating dtype (1.0 and 0.0, ready to
// multiply with logits, as a user would cast PyTorch's result). An index
// outside [0, classes), negative ones included, gives a row of quiet NaN
// (of -1 for Int32) and raises the device's assert, as Embedding does: the
// next read of any tensor on the device returns an *AssertError matching
// ErrBadIndex, Row the index's flat position in idx. classes below 1
// panics with a *UsageError (PyTorch's -1, classes from the data, would
// need a host read), a floating idx with a *DTypeError.
func OneHot(idx *Tensor, classes int, out DType) *Tensor {
	const op = "OneHot"
	sameDevice(op, idx)
	if classes < 1 {
		usagePanic(op, "classes %d is below 1", classes)
	}
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	if !out.valid() {
		panic(&DTypeError{Op: op, Got: out, Want: "float32, float16, bfloat16 or int32"})
	}
	y := newOut(idx.dev, out, append(slices.Clone(idx.shape), classes), idx)
	p := kernels.OneHotPush{N: uint32(y.n), Classes: uint32(classes)}
	recordInto(op, func() error {
		return withAssert(y.dev, func(rec *vk.Buffer) error {
			return kernels.OneHot(y.dev, pairs(y), kernels.OneHotSpec{OutDT: out.code(), AssertOp: assertOneHot}, p,
				kernels.OneHotBind{Idx: idx.buf, D: y.buf, Assert: rec})
		})
	}, y)
	return y
}
