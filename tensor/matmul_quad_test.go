package tensor

import "testing"

// TestMatMulQuadForm checks which form of matmul_quad reads B: by words
// only where B is 16-bit and each word holds two elements wanted together
// (TestMatMul's quad runs check that each form computes the product).
func TestMatMulQuadForm(t *testing.T) {
	for _, c := range []struct {
		bMode  uint32
		transB bool
		n, k   uint32
		want   quadForm
	}{
		{mmModeF16, false, 6, 5, quadPairsN},
		{mmModeBF16, false, 6, 5, quadPairsN},
		{mmModeF16, false, 7, 6, quadGeneric}, // a word would straddle two rows
		{mmModeF16, true, 7, 6, quadPairsK},
		{mmModeBF16, true, 7, 6, quadPairsK},
		{mmModeF16, true, 6, 5, quadGeneric},
		{mmModeF32, false, 6, 6, quadGeneric},
		{mmModeF32, true, 6, 6, quadGeneric},
	} {
		pl := mmPlan{kind: mmQuad, bMode: c.bMode, transB: c.transB}
		if got := mmQuadForm(pl, c.n, c.k); got != c.want {
			t.Errorf("B mode %d, transposed %v, N %d, K %d: form %d, want %d", c.bMode, c.transB, c.n, c.k, got, c.want)
		}
	}
}
