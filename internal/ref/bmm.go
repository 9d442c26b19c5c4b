package ref

// MatMulBroadcast is torch.matmul of a [..., M, K] and b [..., K, N] (stored
// [..., K, M] with transA, [..., N, K] with transB) whose batch dimensions
// broadcast (right-aligned, 1 repeats). It returns the result, the scale of
// each element's error for Check (as Gemm), and the result's shape.
func MatMulBroadcast(a []float32, aShape []int, b []float32, bShape []int, transA, transB bool) (want, scale []float64, shape []int) {
	ra, rb := len(aShape), len(bShape)
	m, k := aShape[ra-2], aShape[ra-1]
	if transA {
		m, k = k, m
	}
	n := bShape[rb-1]
	if transB {
		n = bShape[rb-2]
	}
	ba, bb := aShape[:ra-2], bShape[:rb-2]
	r := max(len(ba), len(bb))
	batch := make([]int, r)
	dim := func(s []int, i int) int { // i-th of r dimensions, right-aligned
		if j := i - (r - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for i := range batch {
		batch[i] = max(dim(ba, i), dim(bb, i))
	}
	// offset is the flat batch of an operand with batch dims s at the
	// result's batch index idx.
	offset := func(s, idx []int) int {
		off := 0
		for i := range idx {
			d := dim(s, i)
			j := idx[i]
			if d == 1 {
				j = 0
			}
			off = off*d + j
		}
		return off
	}
	for e := range numel(batch) {
		idx := unravel(e, batch)
		oa, ob := offset(ba, idx)*m*k, offset(bb, idx)*k*n
		w, s := Gemm{Batch: 1, M: m, N: n, K: k, TransA: transA, TransB: transB, Alpha: 1,
			A: a[oa : oa+m*k], B: b[ob : ob+k*n]}.Run()
		want, scale = append(want, w...), append(scale, s...)
	}
	return want, scale, append(batch, m, n)
}
