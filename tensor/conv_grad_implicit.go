package tensor

// The backward passes of a convolution on conv_tex, where the forward runs
// there (lavapipe); other devices, and layouts these do not cover, keep
// im2col / col2im and MatMul (conv.go).
//
// Input gradient at stride 1: a transposed convolution is the convolution
// of dy with the weights flipped along both kernel axes and with in and out
// channels swapped per group, padded by dil*(k-1)-pad: Conv2d of dy
// [N, Cout, Ho, Wo] with those weights [Cin, Cout/groups, kH, kW] is
// [N, Cin, H, W], and runs on conv_tex like any forward. No patch matrix,
// no col2im, no permute of dy.
//
// Weight gradient: dw[co, (ci, i, j)] sums over (n, oh, ow) of
// dy[n, co, oh, ow] * x[n, ci, oh*sh-ph+i*dh, ow*sw-pw+j*dw]. That is
// conv_tex's GEMM with dy, channel-major, as the weights and x, with batch
// and channels swapped, as the image: the "kernel" is Ho x Wo with
// dilation (sh, sw), the "output" kH x kW with stride (dh, dw). Its
// columns are (ci, i, j), its rows co: the output is dw's layout. conv_tex
// (K_RUNS) reads dy and x where they lie, without permuting copies; with
// sw = 1 and Wo a multiple of 8 every block of 8 k steps reads 8
// neighbours of one row of x per column; with the kernel's dilation along
// the width 1 (TAPS) an invocation's columns are whole kernel rows, whose
// kW taps read one run of 8+kW-1 neighbours. On the MNIST example's conv2
// (kW 3) that is a third of the texels and selects per column.

// implicitInput returns Conv2dBackwardInput of dy and w as the convolution
// of dy with the flipped weights, and whether it applies: stride 1,
// padding at most dil*(k-1), and that convolution on conv_tex.
func (g convGeom) implicitInput(dy, w *Tensor) (*Tensor, bool) {
	if g.sh != 1 || g.sw != 1 || g.ph > g.dh*(g.kh-1) || g.pw > g.dw*(g.kw-1) || convImplicitMode < 0 {
		return nil, false
	}
	o := Conv2dOpts{Padding: [2]int{g.dh*(g.kh-1) - g.ph, g.dw*(g.kw-1) - g.pw}, Dilation: [2]int{g.dh, g.dw}, Groups: g.groups}
	ws := []int{g.cin, g.og, g.kh, g.kw}
	gt := convCheck("Conv2dBackwardInput", dy.shape, ws, o)
	if gt.ho != g.h || gt.wo != g.w {
		return nil, false
	}
	// w has the flipped weights' dtype and size, which is all the plan reads.
	if _, _, ok := gt.implicitPlan(dy, w, gt.n); !ok {
		return nil, false
	}
	kk := g.kh * g.kw
	wf := newOut(w.dev, w.dtype, []int{g.groups, g.cg, g.og, g.kh, g.kw}, w)
	// wf[gr, ci, co, i, j] = w[gr*og+co, ci, kh-1-i, kw-1-j].
	copyStrided("Conv2dBackwardInput", wf, w, []int{g.og * g.cg * kk, kk, g.cg * kk, -g.kw, -1}, kk-1, -1, 0, 0)
	defer wf.Release()
	return Conv2d(dy, wf.view(ws...), nil, o), true
}

// wgradGeom returns the geometry of the weight gradient as conv_tex's
// forward problem (see above); cin and cg stay x's, which K_RUNS reads as
// they lie.
func (g convGeom) wgradGeom() convGeom {
	return convGeom{n: g.cg, cin: g.cin, h: g.h, w: g.w, cout: g.cout, kh: g.ho, kw: g.wo, ho: g.kh, wo: g.kw,
		sh: g.dh, sw: g.dw, ph: g.ph, pw: g.pw, dh: g.sh, dw: g.sw,
		groups: g.groups, cg: g.cg, og: g.og, kg: g.n * g.ho * g.wo}
}

// implicitWeight returns the weight gradient in fp32, of shape wShape, and
// whether it ran on conv_tex: x and dy share fp32 or fp16, the stride along
// the width is 1, Wo is a multiple of 8, and the GEMM would run on the texel
// kernel.
func (g convGeom) implicitWeight(op string, dy, x *Tensor, wShape []int) (*Tensor, bool) {
	pl, mg, ok := g.wgradPlan(dy, x)
	if !ok {
		return nil, false
	}
	y := g.wgradGeom().implicitGemm(op, x, dy, pl, mg, 0, true)
	y.shape, y.n = wShape, checkShape(op, wShape)
	return y, true
}

// wgradPlan returns the matmul_tex plan and problem of the weight gradient
// on conv_tex, and whether it applies.
func (g convGeom) wgradPlan(dy, x *Tensor) (mmPlan, mmGeom, bool) {
	if convImplicitMode < 0 || x.dev.Deterministic() || x.dtype != dy.dtype || x.dtype == BFloat16 || g.sw != 1 || g.wo%8 != 0 ||
		!x.buf.TexelsFit() || !dy.buf.TexelsFit() {
		return mmPlan{}, mmGeom{}, false
	}
	pl, mg, ok := convTexPlan(x.dev, mmGeom{batch: g.groups, m: g.og, n: g.cg * g.kh * g.kw, k: g.n * g.ho * g.wo}, dy.dtype, x.dtype)
	if !ok {
		return mmPlan{}, mmGeom{}, false
	}
	if loopErr(x.dev, "conv_tex", pl.loops(mg.k)) != nil {
		// The depth is the whole batch's pixels: where a driver limits
		// loops, the im2col passes split it.
		return mmPlan{}, mmGeom{}, false
	}
	if g.dw == 1 && g.kw <= 8 {
		// Whole kernel rows per invocation: one run of x serves kW columns
		// (TAPS); the workgroup stays the plan's.
		pl.tile.TN = g.kw * ceilDiv(pl.tile.TN, g.kw)
	}
	return pl, mg, true
}
