package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Embedding returns the rows of w [V, C] picked by idx, an Int32 tensor of
// any shape [...]: a tensor [..., C] in w's dtype, each row a bit-exact copy
// of row idx[...] of w. It is IndexSelect with indices of any shape: an
// index outside [0, V), negative ones included, gives a row of quiet NaN
// and raises the device's assert, which the next read reports as an
// *AssertError matching ErrBadIndex, Row the index's flat position in idx.
// A w that is not 2-D panics
// with a *ShapeError; an Int32 w or a floating idx with a *DTypeError.
func Embedding(w, idx *Tensor) *Tensor {
	const op = "Embedding"
	sameDevice(op, w, idx)
	if len(w.shape) != 2 {
		shapePanic(op, w.shape, idx.shape, "want a weight [vocab, dim]")
	}
	if !w.dtype.floating() {
		panic(&DTypeError{Op: op, Got: w.dtype, Want: wantFloating + " weight"})
	}
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	return selectRows(op, assertEmbedding, w, idx, append(slices.Clone(idx.shape), w.shape[1]))
}

// embeddingChunk is the most indices one embedding_backward dispatch visits
// per vocabulary row: lavapipe ends a kernel invocation's loops after 65535
// iterations (see ErrLoopLimit), and the invocation that lists a chunk's
// matches loops about twice per index, so longer index lists take several
// dispatches, each adding to the last.
const embeddingChunk = 16384

// EmbeddingBackward returns the gradient of Embedding's weight [vocab, C]
// from idx (Int32, any shape [...]) and dy [..., C], the gradient of its
// output: row v is the sum of the rows of dy whose index is v, in fp32.
// The sum runs in index order with one writer per element (no atomics), so
// it is the same on every run. An index outside [0, vocab) has no row to
// add to: it makes the whole gradient NaN, so that a gradient scaler skips
// the step, and raises the device's assert as Embedding does. dy may be any
// floating dtype. A dy whose
// shape is not idx's shape with one more axis panics with a *ShapeError, a
// floating idx or an Int32 dy with a *DTypeError, a vocab below 1 with a
// *UsageError.
//
// Each vocabulary row tests every index (a workgroup tests a chunk at a
// time), so besides the len(idx) * C additions the cost grows as
// vocab * len(idx) / 64: small for a character vocabulary, slow for tens of
// thousands of rows.
func EmbeddingBackward(idx, dy *Tensor, vocab int) *Tensor {
	const op = "EmbeddingBackward"
	sameDevice(op, idx, dy)
	if vocab < 1 {
		usagePanic(op, "vocab %d is below 1", vocab)
	}
	if len(dy.shape) != len(idx.shape)+1 || !slices.Equal(dy.shape[:len(idx.shape)], idx.shape) {
		shapePanic(op, idx.shape, dy.shape, "dy must be idx's shape with the embedding axis added")
	}
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	checkFloating(op, Float32, dy)
	cols := dy.shape[len(dy.shape)-1]
	n := idx.n
	out := newOut(idx.dev, Float32, []int{vocab, cols}, idx, dy)
	if out.err != nil {
		return out
	}
	if n == 0 || cols == 0 {
		return Fill(out, 0)
	}
	// At least 64 invocations: they test 64 indices at a time.
	local := max(rowLocal(idx.dev, cols), min(64, kernels.LocalSize(idx.dev)))
	gy := min(vocab, 65535)
	groups := [3]uint32{uint32((cols + int(local) - 1) / int(local)), uint32(gy), 1}
	chunk := max(1, embeddingChunk/((vocab+gy-1)/gy))
	for i0 := 0; i0 < n && out.err == nil; i0 += chunk {
		acc := uint32(0)
		if i0 > 0 {
			acc = 1
		}
		p := kernels.EmbeddingBackwardPush{I0: uint32(i0), I1: uint32(min(n, i0+chunk)), Cols: uint32(cols), Vocab: uint32(vocab), Acc: acc}
		recordInto(op, func() error {
			return withAssert(idx.dev, func(rec *vk.Buffer) error {
				return kernels.EmbeddingBackward(idx.dev, groups,
					kernels.EmbeddingBackwardSpec{LocalSizeX: local, DyDT: dy.dtype.code(), AssertOp: assertEmbeddingBackward}, p,
					kernels.EmbeddingBackwardBind{Idx: idx.buf, Dy: dy.buf, Dw: out.buf, Assert: rec})
			})
		}, out)
	}
	return out
}
