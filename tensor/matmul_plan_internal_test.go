package tensor

import "testing"

// TestTexelWG checks matmul_tex's workgroup rule: the width of a workgroup
// (wg*tn columns) pads N least, the widest of equals.
func TestTexelWG(t *testing.T) {
	for i, c := range []struct{ wg, tn, n, want int }{
		{32, 8, 1024, 32}, {32, 8, 512, 32}, // whole workgroups at 32
		{32, 8, 384, 16}, {32, 8, 128, 16}, // the GPT's qkv and width
		{32, 8, 65, 16}, // its vocabulary: 128 columns at 16 and at 8
		{32, 8, 8, 8}, {32, 16, 128, 8}, {32, 16, 256, 16},
		{8, 8, 8, 8}, {8, 8, 1000, 8}, // thin problems start at 8
	} {
		if got := texelWG(c.wg, c.tn, c.n); got != c.want {
			t.Errorf("case %d: texelWG(%d, %d, %d) = %d, want %d", i, c.wg, c.tn, c.n, got, c.want)
		}
	}
}
