package tensor

import "slices"

// Batched MatMul: the batch dimensions of A and B broadcast as torch.matmul
// broadcasts them (right-aligned, a dimension of 1 repeats). Every matmul
// kernel takes one batch stride per operand in its push constants (batchA,
// batchB, in elements), and its batch from gl_WorkGroupID.z, so an operand
// that has every batch (stride: its matrix's size) or one matrix for all of
// them (stride 0) runs on each kernel's own fast path with nothing copied.
// An operand broadcast along only some of the batch dimensions ([B, 1] against
// [1, H]) cannot be reached with one stride: it is first copied out to the
// full batch with the strided-copy kernel (copy_nd), which costs that copy's
// memory and time.

// mmBatch is how a MatMul's batch dimensions broadcast.
type mmBatch struct {
	shape            []int // the result's batch dimensions
	strideA, strideB int   // elements between the operands' batches; 0 for one matrix serving all
	expandA, expandB bool  // the operand must be copied out to the full batch first
}

// mmBroadcast broadcasts the batch dimensions of a and b (both of rank 2 or
// more), panicking with a *ShapeError naming both shapes where they do not.
func mmBroadcast(op string, a, b *Tensor) mmBatch {
	ba, bb := a.shape[:len(a.shape)-2], b.shape[:len(b.shape)-2]
	r := max(len(ba), len(bb))
	bt := mmBatch{shape: make([]int, r)}
	for i := range r {
		da, db := mmDimFromEnd(ba, r-1-i), mmDimFromEnd(bb, r-1-i)
		if da != db && da != 1 && db != 1 {
			shapePanic(op, a.shape, b.shape, "batch dimensions %v and %v do not broadcast", ba, bb)
		}
		bt.shape[i] = max(da, db)
	}
	bt.strideA, bt.expandA = mmBatchStride(ba, bt.shape, a.shape)
	bt.strideB, bt.expandB = mmBatchStride(bb, bt.shape, b.shape)
	return bt
}

// mmDimFromEnd is dimension i counted from the end of s, or 1 past its start.
func mmDimFromEnd(s []int, i int) int {
	if i < len(s) {
		return s[len(s)-1-i]
	}
	return 1
}

// mmBatchStride is the batch stride of an operand of shape whose batch
// dimensions batch broadcast to out, and whether it must be expanded first.
func mmBatchStride(batch, out, shape []int) (stride int, expand bool) {
	mat := shape[len(shape)-2] * shape[len(shape)-1]
	n := 1
	for _, s := range batch {
		n *= s
	}
	switch {
	case n == 1:
		return 0, false
	case slices.Equal(batch, out[len(out)-len(batch):]) && n == mmNumel(out):
		return mat, false
	}
	return mat, true
}

func mmNumel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// mmExpand copies x [..., R, C] out to batch dimensions batch [..., R, C]
// (x's batch dimensions broadcast to them), for an operand mmBatchStride
// cannot reach with one stride.
func mmExpand(x *Tensor, batch []int) *Tensor {
	const op = "MatMul"
	r := len(x.shape)
	shape := append(slices.Clone(batch), x.shape[r-2:]...)
	checkRank(op, shape)
	xst := stridesOf(x.shape)
	strides := make([]int, len(shape))
	pad := len(shape) - r
	for i := range shape {
		if i >= pad && x.shape[i-pad] != 1 {
			strides[i] = xst[i-pad]
		}
	}
	out := newOut(x.dev, x.dtype, shape, x)
	copyStrided(op, out, x, strides, 0, -1, 0, 0)
	return out
}
