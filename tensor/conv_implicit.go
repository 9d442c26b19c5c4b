package tensor

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The forward GEMM of a convolution as an implicit GEMM (conv_tex): where
// MatMul would run the patch product on matmul_tex (lavapipe), conv_tex
// runs matmul_tex's tiles and loop but reads each patch element from the
// image itself, so no patch matrix (Kg/Cin = kH*kW times the input) is
// written and read back. It accumulates in matmul_tex's order, so the
// output has the bits of im2col + MatMul on matmul_tex. Other kernels and
// drivers keep im2col.

// convImplicitMode, for tests: 0 follows the rule, 1 takes conv_tex
// wherever the device and layout allow whatever the problem's size, -1
// never takes it.
var convImplicitMode int

// implicitPlan returns the matmul_tex plan and problem of the forward GEMM
// of m samples, and whether conv_tex runs it: where MatMul would choose
// matmul_tex for the patch product, x and the weights wm share fp32 or
// fp16 (bf16 is widened by im2col), the depth is a multiple of 8 (A's
// texel blocks) and both fit in a texel view. Never in deterministic mode,
// whose MatMul is matmul_reg on every device: im2col + MatMul there.
func (g convGeom) implicitPlan(x, wm *Tensor, m int) (mmPlan, mmGeom, bool) {
	if convImplicitMode < 0 || x.dev.Deterministic() || x.dtype != wm.dtype || g.kg%8 != 0 || !x.buf.TexelsFit() || !wm.buf.TexelsFit() {
		return mmPlan{}, mmGeom{}, false
	}
	pl, mg, ok := convTexPlan(x.dev, mmGeom{batch: g.groups, m: g.og, n: m * g.ho * g.wo, k: g.kg}, wm.dtype, x.dtype)
	if !ok {
		return mmPlan{}, mmGeom{}, false
	}
	if g.sw == 1 && g.wo%2 == 0 && g.wo <= 26 {
		// A whole output row per invocation (rowRuns): each run of x
		// then serves Wo columns, and its texels and the selects that
		// shift it are fewer per column. On the MNIST example's conv2
		// (Wo 24, fp16, lavapipe, CPU time) that took it from about 0.7
		// times matmul_tex's rate on the same GEMM (runs of 8) to 0.8 to
		// 0.9, and 32 rows (half the workgroup) rather than 16 to 0.9.
		// Rows need not fill whole texels, only whole fp16 words (Wo
		// even): its input gradient (Wo 26, rows of 26 from padding 2)
		// went from gathering each element, 24-25 GFLOP/s in fp16 and
		// 24-26 in fp32, to 46-51 and 34-38 (tools/bench -step-only
		// -step 64, conv2d/backward-input, lavapipe, three runs), 32 rows
		// again faster than 16 (42-44). Wider rows are not measured. The
		// order of the sums is the same.
		pl.tile.TN = g.wo
		wg := pl.tile.WG
		if mg.bMode != mmModeF32 && pl.tile.TM == 16 && mg.m >= 32 {
			pl.tile.TM, wg = 32, max(8, wg/2)
		}
		pl.tile.WG = texelWG(wg, pl.tile.TN, mg.n)
	} else if g.sw == 1 && g.wo%pl.tile.TN != 0 && g.wo%8 == 0 {
		// Runs of 8 columns (rowRuns) are faster than wider tiles
		// gathered element by element; the order of the sums is the same.
		pl.tile.TN = 8
	}
	return pl, mg, true
}

// convTexPlan returns the matmul_tex plan of a conv_tex GEMM of problem
// mg with A of dtype a and B of dtype b (read transposed), and whether
// MatMul's rule would take matmul_tex for it (or convImplicitMode forces
// it).
func convTexPlan(d *vk.Device, mg mmGeom, a, b DType) (mmPlan, mmGeom, bool) {
	info := d.Info()
	f := formsOf(d)
	kind, forced, err := f.matmulKind(info, "")
	if err == nil && f.forced == "" && f.texels {
		// conv_tex wherever texels serve: the matmul rule's other choice
		// for newer drivers (forms.go) was measured for MatMul only.
		kind = mmTexel
	}
	if err != nil || kind != mmTexel || (!forced && convImplicitMode == 0 && mg.madds() < mmTexelMin) {
		return mmPlan{}, mmGeom{}, false
	}
	mg.aMode = mmMode(a, mmTexel, false, mg.m, mg.k)
	mg.bMode = mmMode(b, mmTexel, true, mg.n, mg.k)
	pl := mmPlanFor(info, mmTexel, mg)
	if t, ok := mmTuned(d, pl, mg); ok {
		pl = pl.withTile(t)
	}
	return pl, mg, true
}

// rowRuns reports whether conv_tex may fetch each invocation's TN columns
// at one k as a run of TN neighbours of one input row: the stride along
// the width is 1 and every run of TN columns lies in one output row.
func (g convGeom) rowRuns(tn int) bool { return g.sw == 1 && g.wo%tn == 0 }

// taps is conv_tex's TAPS for a weight gradient of geometry g (wgradGeom)
// on tiles of tn columns: the original kernel's width, where its dilation
// (g.sw here) is 1, it is at most 8 and tn a multiple of it; else 0.
func (g convGeom) taps(tn int) int {
	if g.sw != 1 || g.wo > 8 || tn%g.wo != 0 {
		return 0
	}
	return g.wo
}

// implicitGemm returns the GEMM output [groups, Cout/groups, m*Ho*Wo] in
// fp32 of samples n0 .. n0+m of x with the weights wm, on plan pl for
// problem mg (from implicitPlan or wgradPlan). With kRuns the kernel width
// is a multiple of 8 with dilation 1 (K_RUNS).
func (g convGeom) implicitGemm(op string, x, wm *Tensor, pl mmPlan, mg mmGeom, n0 int, kRuns bool) *Tensor {
	y := New(x.dev, Float32, g.gemmShape(mg.m, mg.n)...)
	g.convTex(op, y, x, wm, nil, pl, mg, n0, kRuns, false)
	return y
}

// nchwOut reports whether conv_tex may store the forward output as NCHW
// with the bias (NCHW_OUT): every invocation's TN columns lie in one
// sample's plane.
func (g convGeom) nchwOut(pl mmPlan) bool { return g.ho*g.wo%pl.tile.TN == 0 }

// implicitInto writes the convolution of samples n0 .. n0+m of x with the
// weights wm, plus b unless it is nil, into out (NCHW) on conv_tex, where
// nchwOut(pl) holds.
func (g convGeom) implicitInto(op string, out, x, wm, b *Tensor, pl mmPlan, mg mmGeom, n0 int) {
	g.convTex(op, out, x, wm, b, pl, mg, n0, false, true)
}

// convTex records conv_tex into y: the fp32 GEMM layout, or with nchw
// out's NCHW layout and dtype with the bias b (nil for none).
func (g convGeom) convTex(op string, y, x, wm, b *Tensor, pl mmPlan, mg mmGeom, n0 int, kRuns, nchw bool) {
	if !checkLoops(y, op, pl.loops(mg.k), "conv_tex") {
		return
	}
	info := x.dev.Info()
	rows, cols := pl.outTile()
	gx, gy := ceilDiv(mg.n, cols), ceilDiv(mg.m, rows)
	if gx > int(info.MaxWorkgroupCount[0]) || gy > int(info.MaxWorkgroupCount[1]) {
		y.fail(fmt.Errorf("tensor: %s: %dx%d workgroups exceed the device's limit %v", op, gx, gy, info.MaxWorkgroupCount))
		return
	}
	c := g.convPush(n0, 0)
	p := kernels.MatmulConvPush{M: u32(mg.m), N: u32(mg.n), K: u32(mg.k), BatchA: u32(mg.m * mg.k), Batches: u32(mg.batch),
		Flags: mmFlags(nil, nil, Float32, pl), Alpha: 1,
		N0: c.N0, Cin: c.Cin, H: c.H, W: c.W, Ho: c.Ho, Wo: c.Wo, Kh: c.Kh, Kw: c.Kw,
		Sh: c.Sh, Sw: c.Sw, Ph: c.Ph, Pw: c.Pw, Dh: c.Dh, Dw: c.Dw, Cg: c.Cg}
	bias := y.buf
	if nchw {
		p.Flags = mmFlags(nil, b, y.dtype, pl)
		if b != nil {
			bias = b.buf
		}
	}
	if kRuns { // dy's rows are Ho*Wo apart, its groups og rows
		p.BatchA = u32(mg.m * g.kh * g.kw)
	}
	t := pl.tile
	spec := kernels.ConvTexSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK), AMode: mg.aMode, BMode: mg.bMode,
		RowRuns: !kRuns && g.rowRuns(t.TN), KRuns: kRuns, NchwOut: nchw}
	if kRuns {
		spec.Taps = u32(g.taps(t.TN))
	}
	maxZ := int(info.MaxWorkgroupCount[2])
	for b0 := 0; b0 < mg.batch && y.err == nil; b0 += maxZ {
		p.Batch0 = u32(b0)
		groups := [3]uint32{u32(gx), u32(gy), u32(min(mg.batch-b0, maxZ))}
		launched(y, kernels.ConvTex(x.dev, groups, spec, p,
			kernels.ConvTexBind{Ta: wm.buf, Tb: x.buf, BufC: y.buf, BufBias: bias, BufOut: y.buf}))
	}
}
