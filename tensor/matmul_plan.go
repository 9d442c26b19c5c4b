package tensor

import (
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// A matmul plan names a kernel, its tile and the operand layout its pipeline
// is specialised for; one small function per kernel turns it into that
// kernel's typed specialization (texSpec, regSpec, ...), and record launches
// it.

// mmKind is a matmul kernel family.
type mmKind int

const (
	mmShared        mmKind = iota // matmul_shared: shared-memory tiles, for GPUs
	mmRegister                    // matmul_reg: register tiles only, runs anywhere
	mmSubgroup                    // matmul_sg: register tiles, A shared by subgroup shuffles
	mmTexel                       // matmul_tex: register tiles fed by texel fetches
	mmCoop                        // matmul_coop: cooperative matrices (tensor cores), fp16 A and B
	mmCoopEmu                     // matmul_coop_emu: matmul_coop emulated, for tests; never chosen
	mmQuad                        // matmul_quad: compile-time tiles, A shared by quad broadcasts (forms.go: CPU drivers without texels)
	mmCoopBF16                    // matmul_coop_bf16: matmul_coop for bf16 A and B
	mmCoopCM2                     // matmul_cm2: matmul_coop on VK_NV_cooperative_matrix2's subgroup-scope features
	mmCoopCM2WG                   // matmul_cm2_wg: workgroup-scope cooperative matrices, tensor-addressed loads
	mmCoopCM2WGBF16               // matmul_cm2_wg_bf16: matmul_cm2_wg for bf16 A and B
)

var mmKernelNames = [...]string{
	mmShared: "matmul_shared", mmRegister: "matmul_reg", mmSubgroup: "matmul_sg",
	mmTexel: "matmul_tex", mmCoop: "matmul_coop", mmCoopEmu: "matmul_coop_emu",
	mmQuad: "matmul_quad", mmCoopBF16: "matmul_coop_bf16", mmCoopCM2: "matmul_cm2",
	mmCoopCM2WG: "matmul_cm2_wg", mmCoopCM2WGBF16: "matmul_cm2_wg_bf16",
}

// String is the kernel's name, the .comp file's base name.
func (k mmKind) String() string { return mmKernelNames[k] }

// mmTile is the tile of a plan: the named specialization constants of the
// matmul kernels. Each kernel reads the fields it has; zero fields take the
// shader's default.
type mmTile struct {
	WG     int // invocations per workgroup
	TM, TN int // the output tile of one invocation (matmul_coop: 1 x 256/SG)
	KK     int // k step of the register blocks
	WGX    int // matmul_reg: invocations side by side along N
	SG     int // subgroup size (matmul_sg's S, matmul_coop's SG)
	BM, BN int // the workgroup's output tile (matmul_shared, matmul_coop)
	BK     int // its k step
	// matmul_coop: subgroups along M and N, and the subgroup shape.
	WarpsM, WarpsN int
	CM, CN, CK     int
}

// mmPlan is a kernel, its tile and the operand layout its pipeline is
// specialised for. A dyn plan takes the transposes and operand encodings
// from the push constants' flags instead: one generic pipeline per kernel.
type mmPlan struct {
	kind           mmKind
	tile           mmTile
	transA, transB bool
	aMode, bMode   uint32
	dyn            bool
	// wideOut is matmul_tex's WIDE_OUT: 1 + the output's dtype code where
	// its epilogue stores 64-bit words (mmCall.launch), else 0.
	wideOut uint32
	// epi is matmul_tex's EPI, its epilogue's flags (mmEpi), set at launch.
	epi uint32
	// emuBF16 is matmul_coop_emu's EMU_BF16: its inputs are bf16.
	emuBF16 bool
}

// loops is about the most loop iterations one invocation of pl runs for a
// depth of k (see ErrLoopLimit): the k loop, plus the tile loads of
// matmul_shared and the row loop of the epilogue.
func (pl mmPlan) loops(k int) int {
	t := pl.tile
	switch pl.kind {
	case mmTexel:
		return ceilDiv(k, 8) + t.TM
	case mmShared:
		return ceilDiv(k, t.BK)*(1+ceilDiv(t.BM*t.BK, t.WG)+ceilDiv(t.BK*t.BN, t.WG)) + t.TM
	case mmCoop, mmCoopBF16, mmCoopCM2, mmCoopCM2WG, mmCoopCM2WGBF16, mmCoopEmu:
		return ceilDiv(k, t.BK) + t.TM
	case mmQuad:
		return ceilDiv(k, 4) + 4 + mmQuadTM*mmQuadTN // the k loop, its tail, the epilogue's loop
	}
	return ceilDiv(k, t.KK) + t.KK + t.TM // the register kernels, and their remainder loop
}

// outTile is the output tile one workgroup covers: rows along M, cols
// along N.
func (pl mmPlan) outTile() (rows, cols int) {
	t := pl.tile
	switch pl.kind {
	case mmTexel:
		return t.TM, t.TN * t.WG
	case mmRegister:
		return t.WG / t.WGX * t.TM, t.WGX * t.TN
	case mmSubgroup:
		return t.WG / t.SG * t.TM, t.SG * t.TN
	case mmQuad:
		return t.WG / 4 * mmQuadTM, 4 * mmQuadTN
	}
	return t.BM, t.BN // shared memory and cooperative matrices
}

// layout is the specialised layout: zero (the shaders' defaults, unused)
// for a dyn plan.
func (pl mmPlan) layout() (transA, transB bool, aMode, bMode uint32) {
	if pl.dyn {
		return false, false, 0, 0
	}
	return pl.transA, pl.transB, pl.aMode, pl.bMode
}

func u32(v int) uint32 { return uint32(v) }

func (pl mmPlan) texSpec() kernels.MatmulTexSpec {
	t := pl.tile
	ta, tb, am, bm := pl.layout()
	return kernels.MatmulTexSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK),
		TransA: ta, TransB: tb, AMode: am, BMode: bm, Dyn: pl.dyn, WideOut: pl.wideOut, Epi: pl.epi}
}

func (pl mmPlan) regSpec() kernels.MatmulRegSpec {
	t := pl.tile
	ta, tb, am, bm := pl.layout()
	return kernels.MatmulRegSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK),
		TransA: ta, TransB: tb, AMode: am, BMode: bm, WGX: u32(t.WGX), Dyn: pl.dyn}
}

func (pl mmPlan) sgSpec() kernels.MatmulSgSpec {
	t := pl.tile
	ta, tb, am, bm := pl.layout()
	return kernels.MatmulSgSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK),
		TransA: ta, TransB: tb, AMode: am, BMode: bm, S: u32(t.SG), Dyn: pl.dyn}
}

func (pl mmPlan) sharedSpec() kernels.MatmulSharedSpec {
	t := pl.tile
	ta, tb, am, bm := pl.layout()
	return kernels.MatmulSharedSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK),
		TransA: ta, TransB: tb, AMode: am, BMode: bm, BM: u32(t.BM), BN: u32(t.BN), BK: u32(t.BK), Dyn: pl.dyn}
}

// coopSpec serves matmul_coop and matmul_coop_bf16, whose constants are
// the same; coopEmuSpec their emulation.
func (pl mmPlan) coopSpec() kernels.MatmulCoopSpec {
	t := pl.tile
	ta, tb, am, bm := pl.layout()
	return kernels.MatmulCoopSpec{LocalSizeX: u32(t.WG), TM: u32(t.TM), TN: u32(t.TN), KK: u32(t.KK),
		TransA: ta, TransB: tb, AMode: am, BMode: bm, Dyn: pl.dyn,
		WarpsM: u32(t.WarpsM), WarpsN: u32(t.WarpsN), SG: u32(t.SG), BM: u32(t.BM), BN: u32(t.BN), BK: u32(t.BK),
		Cm: u32(t.CM), Cn: u32(t.CN), Ck: u32(t.CK)}
}

func (pl mmPlan) cm2wgSpec() kernels.MatmulCm2WgSpec {
	t := pl.tile
	return kernels.MatmulCm2WgSpec{LocalSizeX: u32(t.WG), TM: 1, TN: 1, TransA: pl.transA, TransB: pl.transB,
		BM: u32(t.BM), BN: u32(t.BN), BK: u32(t.BK)}
}

func (pl mmPlan) coopEmuSpec() kernels.MatmulCoopEmuSpec {
	s := pl.coopSpec()
	return kernels.MatmulCoopEmuSpec{LocalSizeX: s.LocalSizeX, TM: s.TM, TN: s.TN, KK: s.KK,
		TransA: s.TransA, TransB: s.TransB, AMode: s.AMode, BMode: s.BMode, Dyn: s.Dyn,
		WarpsM: s.WarpsM, WarpsN: s.WarpsN, SG: s.SG, BM: s.BM, BN: s.BN, BK: s.BK,
		Cm: s.Cm, Cn: s.Cn, Ck: s.Ck, EmuBf16: pl.emuBF16}
}

// mmBufs are a matmul's bindings: A, B, C, the bias and the output.
type mmBufs struct{ a, b, c, bias, out *vk.Buffer }

// record launches the plan's kernel on d.
func (pl mmPlan) record(d *vk.Device, groups [3]uint32, p kernels.MatmulPush, b mmBufs) error {
	switch pl.kind {
	case mmTexel:
		return kernels.MatmulTex(d, groups, pl.texSpec(), p,
			kernels.MatmulTexBind{Ta: b.a, Tb: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmRegister:
		return kernels.MatmulReg(d, groups, pl.regSpec(), p,
			kernels.MatmulRegBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmSubgroup:
		return kernels.MatmulSg(d, groups, pl.sgSpec(), p,
			kernels.MatmulSgBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmCoop:
		return kernels.MatmulCoop(d, groups, pl.coopSpec(), p,
			kernels.MatmulCoopBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmCoopBF16:
		return kernels.MatmulCoopBf16(d, groups, kernels.MatmulCoopBf16Spec(pl.coopSpec()), p,
			kernels.MatmulCoopBf16Bind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmCoopCM2:
		return kernels.MatmulCm2(d, groups, kernels.MatmulCm2Spec(pl.coopSpec()), p,
			kernels.MatmulCm2Bind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmCoopCM2WG:
		return kernels.MatmulCm2Wg(d, groups, pl.cm2wgSpec(), p,
			kernels.MatmulCm2WgBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmCoopCM2WGBF16:
		return kernels.MatmulCm2WgBf16(d, groups, kernels.MatmulCm2WgBf16Spec(pl.cm2wgSpec()), p,
			kernels.MatmulCm2WgBf16Bind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	case mmQuad:
		s, bind := kernels.MatmulQuadSpec{LocalSizeX: u32(pl.tile.WG), Dyn: true},
			kernels.MatmulQuadBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out}
		switch mmQuadForm(pl, p.N, p.K) {
		case quadPairsN:
			return kernels.MatmulQuadPairsN(d, groups, kernels.MatmulQuadPairsNSpec(s), p, kernels.MatmulQuadPairsNBind(bind))
		case quadPairsK:
			return kernels.MatmulQuadPairsK(d, groups, kernels.MatmulQuadPairsKSpec(s), p, kernels.MatmulQuadPairsKBind(bind))
		}
		return kernels.MatmulQuad(d, groups, s, p, bind)
	case mmCoopEmu:
		return kernels.MatmulCoopEmu(d, groups, pl.coopEmuSpec(), p,
			kernels.MatmulCoopEmuBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
	}
	return kernels.MatmulShared(d, groups, pl.sharedSpec(), p,
		kernels.MatmulSharedBind{BufA: b.a, BufB: b.b, BufC: b.c, BufBias: b.bias, BufOut: b.out})
}

// mmPlanFor chooses tile sizes from the device's limits and the problem's
// shape. Large problems (M and N of 64 or more) get large tiles and a
// pipeline specialised for their transposes and dtypes. Small ones get small
// tiles, which waste less on clamped rows and columns, and one generic
// pipeline per kernel: CPU drivers take up to a second to compile each
// pipeline, longer than a small matmul runs.
func mmPlanFor(info vk.Info, kind mmKind, g mmGeom) mmPlan {
	small := g.m < 64 || g.n < 64
	pl := mmPlan{kind: kind, tile: mmTile{KK: 4}, transA: g.transA, transB: g.transB,
		aMode: g.aMode, bMode: g.bMode, dyn: small}
	maxInv := int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0]))
	switch kind {
	case mmTexel:
		// WG invocations cover TM rows of TN columns each. Measured on
		// lavapipe (fp16 1024^3, 2 s per tile, noisy to +-15%): 16 rows
		// of 8 columns reuse each texel most within its registers, and 32
		// invocations (four SIMD rows) edge out 8 and 16. fp32 takes the
		// same tile: 16 columns once measured faster, but no longer are
		// (four alternated runs: 1024^3 58.7-59.5 GFLOP/s against
		// 58.8-59.9, 1024x1024x64 24.1-24.9 against 22.6-24.7, the MNIST
		// MLP's weight gradient 256x784x64 18.5-20.1 against 17.7-18.9).
		// Thin problems (M <= 16) take 8 rows and 8 invocations, so that
		// no fetched row is wasted and the few workgroups spread over the
		// CPU's threads. Always specialised: the rule gives it large
		// problems only.
		tm, tn, wg := 16, 8, 32
		if g.m <= 16 {
			tm, tn, wg = 8, 8, 8
		}
		wg = texelWG(wg, tn, g.n)
		pl.tile.WG, pl.tile.TM, pl.tile.TN = min(wg, maxInv), tm, tn
		pl.dyn = false
	case mmRegister:
		// One 8x8 tile per invocation (4x4 for small problems), 8x8
		// invocations per workgroup.
		t := 8
		if small {
			t = 4
		}
		pl.tile.WG, pl.tile.TM, pl.tile.TN, pl.tile.WGX = 64, t, t, 8
	case mmSubgroup:
		// A subgroup covers tm rows and s*tn columns; a workgroup is 8
		// subgroups stacked along M. Large tiles: 64 rows of 8 columns per
		// lane, which amortise each load over the most FMAs lavapipe's
		// registers and compile times allow (fp16 1024^3: 5.5 GFLOP/s per
		// core with 32x8, 7.4 with 64x8). Wide subgroups (GPUs, forced) get
		// one row per lane.
		s := int(info.SubgroupSize)
		tm, tn := 64, 8
		if small || s > 16 {
			tm, tn = s, 4
		}
		pl.tile.WG, pl.tile.TM, pl.tile.TN, pl.tile.SG = max(s, min(8*s, 256, maxInv)/s*s), tm, tn, s
	case mmQuad:
		// The tile is matmul_quad's compile-time 8x8 per lane; a workgroup
		// stacks quads along M: 16 (128 rows), or 8 for short problems (the
		// attention's 64-row products), whole subgroups either way. One
		// pipeline (dyn) serves every layout and encoding: matmul_quad reads
		// them through strides, and SwiftShader compiles each pipeline in
		// about a second.
		wg := 64
		if g.m <= 64 {
			wg = 32
		}
		s := max(int(info.SubgroupSize), 4)
		pl.tile.WG = max(s, min(wg, maxInv)/s*s)
		pl.tile.TM, pl.tile.TN = mmQuadTM, mmQuadTN
		pl.dyn = true
	default:
		// Shared memory: 64x64 tiles of 4x4 per invocation (256
		// invocations) where the device allows, else 32x32.
		bm, t, bk := 64, 4, 16
		if small || maxInv < 256 || int(info.MaxSharedMemory) < 2*bm*bk*4 {
			bm = 32
		}
		pl.tile.WG, pl.tile.TM, pl.tile.TN = bm/t*bm/t, t, t
		pl.tile.BM, pl.tile.BN, pl.tile.BK = bm, bm, bk
	}
	return pl
}

// texelWG narrows matmul_tex's workgroup for narrow problems. A workgroup
// spans wg*tn columns, and lanes past N compute clamped columns that are
// dropped: at wg 32 a GPT's N = 128 wastes half the work, N = 384 a
// quarter, its vocabulary's N = 65 three quarters. So it takes the
// workgroup of wg, wg/2, ... 8 that pads N least, the widest of equals.
// Measured on lavapipe (the GPT's 768-row products, CPU time): 1.5 to 1.9
// times the GFLOP/s where N is 128, 384 or 65, the same where N = 512.
func texelWG(wg, tn, n int) int {
	best, padded := wg, ceilDiv(n, wg*tn)*wg*tn
	for w := wg / 2; w >= 8; w /= 2 {
		if p := ceilDiv(n, w*tn) * w * tn; p < padded {
			best, padded = w, p
		}
	}
	return best
}

// quadForm is the form of matmul_quad a launch runs.
type quadForm int

const (
	quadGeneric quadForm = iota // matmul_quad: every element of B its own load
	quadPairsN                  // matmul_quad_pairs_n: a word of B is two columns
	quadPairsK                  // matmul_quad_pairs_k: a word of B (transposed) is two k
)

// mmQuadForm picks matmul_quad's form for plan pl and a K x N B: a 16-bit
// B whose words each hold two elements the kernel wants together, two
// neighbouring columns or (transposed) two neighbouring k, is read a word
// at a time, half the loads, which SwiftShader makes one lane at a time.
// B's batches (K*N elements apart, or shared) then start at whole words
// too. On SwiftShader (go test -bench 'MatMul(GPT|MLP)' ./tensor, fp16,
// two alternated runs) the GPT's products took 0.58-0.66x the time, the
// MNIST MLP's 0.65x and, A transposed, 0.74x; its AMP training step went
// from 0.91-0.94x fp32's speed to 1.23-1.25x (tools/bench's
// train-step/amp-vs-fp32, two alternated runs).
func mmQuadForm(pl mmPlan, n, k uint32) quadForm {
	switch {
	case pl.bMode == mmModeF32:
		return quadGeneric
	case !pl.transB && n%2 == 0:
		return quadPairsN
	case pl.transB && k%2 == 0:
		return quadPairsK
	}
	return quadGeneric
}

// mmQuadTM and mmQuadTN are matmul_quad's tile per lane, MATMUL_TM and
// MATMUL_TN in shaders/matmul_quad.comp.
const mmQuadTM, mmQuadTN = 8, 8
