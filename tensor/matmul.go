package tensor

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/vkamp/vkamp/vk"
)

// MatMulOpts configures MatMul. The zero value computes A·B with an fp32
// result.
type MatMulOpts struct {
	// TransA and TransB use the transpose of A or B: A is then stored
	// [..., K, M], B [..., N, K]. The backward of a linear layer needs both
	// (X^T·dY and dY·W^T); nothing is copied.
	TransA, TransB bool
	// Alpha scales the product; 0 means 1.
	Alpha float32
	// Beta scales C. When Beta is 0, C is not read at all (as in BLAS), so
	// an uninitialised or NaN C cannot leak into the result.
	Beta float32
	// C is the accumulator, read when Beta != 0: the output's shape, fp32 or
	// fp16. It is only read; the result is a new tensor.
	C *Tensor
	// Bias, if set, has shape [N] (fp32 or fp16) and is added to every row.
	Bias *Tensor
	// Out is the result's dtype: Float32 (the zero value) or Float16.
	Out DType
}

// MatMul returns alpha·op(A)·op(B) + beta·C + bias, where op is the identity
// or the transpose (see MatMulOpts).
//
// A is [..., M, K] and B is [..., K, N] (before op); the leading batch
// dimensions of A and B must be equal, or B may have none, so that one weight
// matrix serves every batch. The result is [..., M, N] in dtype o.Out.
//
// A and B may each be fp16 or fp32. Products are always accumulated in fp32;
// alpha, C and the bias are applied in fp32 and the sum is rounded once to
// the output dtype (to nearest even, overflowing to inf). Infinities and NaNs
// propagate as in IEEE arithmetic: a NaN in row i of op(A) makes row i of
// the result NaN, never 0.
//
// Shapes that do not fit panic with a *ShapeError naming both shapes; an
// unsupported dtype panics with a *DTypeError; nil, released or mixed-device
// tensors panic with a *UsageError. Errors of the device, or an invalid
// VKAMP_MATMUL, are carried by the returned tensor.
//
// The kernel depends on the device: GPUs with cooperative matrices
// (VK_KHR_cooperative_matrix) use them for fp16 A and B; GPUs otherwise
// stage tiles in shared memory;
// lavapipe reads A and B as texels (when K and the operands' contiguous
// dimensions are multiples of 8); CPU drivers otherwise use register tiles
// whose rows are shared across a subgroup with subgroupShuffle, or plain
// register tiles when shuffles are missing. The environment variable
// VKAMP_MATMUL=shared, register, subgroup, texel or coop forces one. Tiles follow
// a fixed rule per device unless AutotuneMatMul stored faster ones.
func MatMul(a, b *Tensor, o MatMulOpts) *Tensor {
	const op = "MatMul"
	ts := []*Tensor{a, b}
	c := o.C
	if o.Beta == 0 {
		c = nil
	} else if c == nil {
		usagePanic(op, "Beta is %g but C is nil", o.Beta)
	}
	for _, t := range []*Tensor{c, o.Bias} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	sameDevice(op, ts...)
	for _, t := range ts {
		if !t.dtype.supported() {
			panic(&DTypeError{Op: op, Got: t.dtype, Want: "float32 or float16"})
		}
	}
	if !o.Out.supported() {
		panic(&DTypeError{Op: op, Got: o.Out, Want: "float32 or float16"})
	}
	g := mmShapes(a, b, o)
	outShape := append(slices.Clone(a.shape[:len(a.shape)-2]), g.m, g.n)
	if c != nil && !slices.Equal(c.shape, outShape) {
		shapePanic(op, c.shape, outShape, "C must have the result's shape")
	}
	if o.Bias != nil && !slices.Equal(o.Bias.shape, []int{g.n}) {
		shapePanic(op, o.Bias.shape, []int{g.n}, "bias must be [N]")
	}

	out := newOut(a.dev, o.Out, outShape, ts...)
	if out.err != nil {
		return out
	}
	info := a.dev.Info()
	g, pl, err := mmChoose(info, a, b, g)
	if err != nil {
		out.fail(fmt.Errorf("tensor: %s: %w", op, err))
		return out
	}

	alpha := o.Alpha
	if alpha == 0 {
		alpha = 1
	}
	mmLaunch(out, a, b, c, o.Bias, g, pl, alpha, o.Beta)
	return out
}

// mmLaunch records plan pl for problem g into out: out = alpha·op(a)·op(b)
// + beta·c + bias, where c and bias may be nil.
func mmLaunch(out, a, b, c, bias *Tensor, g mmGeom, pl mmPlan, alpha, beta float32) {
	info := out.dev.Info()
	var flags uint32
	cbind, bbind := a, a // unused bindings still need a buffer
	if c != nil {
		flags |= mmFlagC | mmF16Flag(c.dtype, mmFlagCF16)
		cbind = c
	}
	if bias != nil {
		flags |= mmFlagBias | mmF16Flag(bias.dtype, mmFlagBiasF16)
		bbind = bias
	}
	flags |= mmF16Flag(out.dtype, mmFlagOutF16)
	if pl.dyn {
		flags |= b2u(g.transA)*mmFlagTransA | b2u(g.transB)*mmFlagTransB |
			g.aMode<<mmFlagAModeShift | g.bMode<<mmFlagBModeShift
	}
	batchB := uint32(g.k * g.n)
	if len(b.shape) == 2 {
		batchB = 0
	}
	gx, gy := ceilDiv(g.n, pl.cols), ceilDiv(g.m, pl.rows)
	if gx > int(info.MaxWorkgroupCount[0]) || gy > int(info.MaxWorkgroupCount[1]) {
		out.fail(fmt.Errorf("tensor: MatMul: %dx%d workgroups exceed the device's limit %v", gx, gy, info.MaxWorkgroupCount))
		return
	}
	// Batches beyond the z limit go in further dispatches.
	maxZ := int(info.MaxWorkgroupCount[2])
	for b0 := 0; b0 < g.batch; b0 += maxZ {
		nz := min(g.batch-b0, maxZ)
		push := []uint32{uint32(g.m), uint32(g.n), uint32(g.k), uint32(g.m * g.k), batchB,
			uint32(b0), uint32(g.batch), flags, math.Float32bits(alpha), math.Float32bits(beta)}
		launch(out, pl.kernel, pl.spec, [3]uint32{uint32(gx), uint32(gy), uint32(nz)}, push, a, b, cbind, bbind, out)
	}
}

// Push-constant flags, as in shaders/include/matmul.glsl.
const (
	mmFlagC uint32 = 1 << iota
	mmFlagCF16
	mmFlagBias
	mmFlagBiasF16
	mmFlagOutF16
	mmFlagTransA
	mmFlagTransB

	mmFlagAModeShift = 8
	mmFlagBModeShift = 10
)

func mmF16Flag(d DType, flag uint32) uint32 {
	if d == Float16 {
		return flag
	}
	return 0
}

// mmChoose picks the kernel family, the operand encodings and the plan for
// problem g on a device: the rule's, with the autotuner's tile if it stored
// one for this device.
func mmChoose(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	g, pl, err := mmChooseRule(info, a, b, g)
	if err == nil {
		if spec, ok := mmTuned(info, pl, g); ok {
			pl = pl.withTile(spec)
		}
	}
	return g, pl, err
}

// mmChooseRule is mmChoose without tuning: the deterministic rule.
func mmChooseRule(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	kind, forced, err := mmKindFor(info)
	if err != nil {
		return g, mmPlan{}, err
	}
	if kind == mmTexel && !(mmTexelFits(g, a, b) && (forced || g.madds() >= mmTexelMin)) {
		kind = mmCPUKind(info)
	}
	g.aMode = mmMode(a.dtype, kind, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, kind, !g.transB, g.n, g.k)
	if kind == mmCoop {
		if pl, ok := mmCoopPlan(info, g); ok {
			return g, pl, nil
		}
		kind = mmShared // an fp32 operand, or tiles the device's limits refuse
	}
	return g, mmPlanFor(info, kind, g), nil
}

// mmTexelMin is the smallest problem, in multiply-adds, that the default
// rule gives matmul_tex: lavapipe compiles each of its specialisations in
// one to two seconds, longer than smaller problems take on the generic
// pipelines.
const mmTexelMin = 1 << 21

func (g mmGeom) madds() int { return g.batch * g.m * g.n * g.k }

// mmTexelFits reports whether matmul_tex can run g: it reads blocks of 8
// elements along K and along the contiguous dimension of each operand, and
// each operand must fit in one texel view.
func mmTexelFits(g mmGeom, a, b *Tensor) bool {
	return g.k%8 == 0 && (!g.transA || g.m%8 == 0) && (g.transB || g.n%8 == 0) &&
		a.buf.TexelsFit() && b.buf.TexelsFit()
}

// Operand encodings, the shaders' A_MODE and B_MODE.
const (
	mmModeF32   = 0
	mmModeF16   = 1 // one fp16 value per load
	mmModeF16x2 = 2 // two neighbours along the contiguous dimension per load
)

// mmMode picks an operand's encoding. Pairs need the two halves of every
// word to be neighbours along the dimension the kernel walks: the operand's
// contiguous dimension must have even length (outer for A stored [M, K]
// transposed, or B stored [K, N]; K otherwise).
func mmMode(d DType, kind mmKind, outerContiguous bool, outer, k int) uint32 {
	switch {
	case d == Float32:
		return mmModeF32
	case kind == mmShared, kind == mmTexel, kind == mmCoop: // element by element, or by texel
		return mmModeF16
	case outerContiguous && outer%2 == 0, !outerContiguous && k%2 == 0:
		return mmModeF16x2
	}
	return mmModeF16
}

// mmGeom is the problem MatMul hands to a kernel.
type mmGeom struct {
	batch, m, n, k int
	transA, transB bool
	aMode, bMode   uint32
}

// mmShapes checks the operands' shapes and returns the problem size.
func mmShapes(a, b *Tensor, o MatMulOpts) mmGeom {
	const op = "MatMul"
	ra, rb := len(a.shape), len(b.shape)
	if ra < 2 || rb < 2 {
		shapePanic(op, a.shape, b.shape, "operands need at least 2 dimensions")
	}
	if rb > 2 && !slices.Equal(a.shape[:ra-2], b.shape[:rb-2]) {
		shapePanic(op, a.shape, b.shape, "batch dimensions differ (B may also have none)")
	}
	g := mmGeom{batch: 1, transA: o.TransA, transB: o.TransB}
	for _, s := range a.shape[:ra-2] {
		g.batch *= s
	}
	g.m, g.k = a.shape[ra-2], a.shape[ra-1]
	if o.TransA {
		g.m, g.k = g.k, g.m
	}
	kb, n := b.shape[rb-2], b.shape[rb-1]
	if o.TransB {
		kb, n = n, kb
	}
	if kb != g.k {
		shapePanic(op, a.shape, b.shape, "inner dimensions %d and %d differ (TransA %v, TransB %v)", g.k, kb, o.TransA, o.TransB)
	}
	g.n = n
	return g
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// mmKind is a matmul kernel family.
type mmKind int

const (
	mmShared   mmKind = iota // matmul_shared: shared-memory tiles, for GPUs
	mmRegister               // matmul_reg: register tiles only, runs anywhere
	mmSubgroup               // matmul_sg: register tiles, A shared by subgroup shuffles
	mmTexel                  // matmul_tex: register tiles fed by texel fetches
	mmCoop                   // matmul_coop: cooperative matrices (tensor cores), fp16 A and B
)

// mmKindFor applies VKAMP_MATMUL, else the rule: GPUs use cooperative
// matrices for fp16 where the device has them, else shared memory;
// lavapipe reads A and B as texels (matmul_tex) where the operands' layout
// allows and the problem is large enough; else CPU drivers use register tiles,
// with subgroup shuffles when they have them. matmul_sg needs full
// subgroups of the advertised size, which CPU drivers give; some GPUs vary
// the size per shader, so there it is only an experiment. forced says that
// VKAMP_MATMUL asked for the texel kernel: it then runs whatever the
// problem's size (still only where the layout allows).
func mmKindFor(info vk.Info) (kind mmKind, forced bool, err error) {
	switch v := os.Getenv("VKAMP_MATMUL"); v {
	case "":
	case "shared":
		return mmShared, false, nil
	case "register":
		return mmRegister, false, nil
	case "texel":
		if mmSwiftShader(info) {
			return 0, false, fmt.Errorf("VKAMP_MATMUL=texel: SwiftShader's shader compiler does not finish matmul_tex")
		}
		return mmTexel, true, nil
	case "coop":
		if !info.CooperativeMatrixUsable {
			return 0, false, fmt.Errorf("VKAMP_MATMUL=coop, but %s has no usable cooperative matrices (VK_KHR_cooperative_matrix with an fp16 x fp16 -> fp32 subgroup shape, at the fp16 tier)", info.Name)
		}
		return mmCoop, true, nil
	case "subgroup":
		if !mmHasShuffle(info) {
			return 0, false, fmt.Errorf("VKAMP_MATMUL=subgroup, but %s has no subgroup shuffle in compute shaders", info.Name)
		}
		return mmSubgroup, false, nil
	default:
		return 0, false, fmt.Errorf("VKAMP_MATMUL=%q: want shared, register, subgroup, texel or coop", v)
	}
	if info.Type != vk.TypeCPU {
		if info.CooperativeMatrixUsable {
			return mmCoop, false, nil
		}
		return mmShared, false, nil
	}
	if mmSwiftShader(info) {
		return mmCPUKind(info), false, nil
	}
	return mmTexel, false, nil
}

// mmSwiftShader reports SwiftShader, whose compiler runs for minutes and
// gigabytes on matmul_tex without finishing (measured with its Debian 12
// build, chromium 156).
func mmSwiftShader(info vk.Info) bool { return strings.Contains(info.DriverName, "SwiftShader") }

// mmCPUKind is the register kernel for problems matmul_tex does not take.
func mmCPUKind(info vk.Info) mmKind {
	if info.Type == vk.TypeCPU && mmHasShuffle(info) {
		return mmSubgroup
	}
	return mmRegister
}

func mmHasShuffle(info vk.Info) bool {
	s := info.SubgroupSize
	return info.SubgroupInCompute && slices.Contains(info.SubgroupOperations, "shuffle") &&
		s >= 2 && s <= 64 && s&(s-1) == 0
}

// mmPlan is a kernel, its specialization constants and the output tile one
// workgroup covers. A dyn plan reads the transposes and operand encodings
// from push constants instead of specialization constants.
type mmPlan struct {
	kernel     string
	spec       map[uint32]uint32
	rows, cols int
	dyn        bool
}

// mmPlanFor chooses tile sizes from the device's limits and the problem's
// shape. Large problems (M and N of 64 or more) get large tiles and a
// pipeline specialised for their transposes and dtypes. Small ones get small
// tiles, which waste less on clamped rows and columns, and one generic
// pipeline per kernel: CPU drivers take up to a second to compile each
// pipeline, longer than a small matmul runs.
func mmPlanFor(info vk.Info, kind mmKind, g mmGeom) mmPlan {
	small := g.m < 64 || g.n < 64
	spec := map[uint32]uint32{3: 4} // KK: the k block
	if small {
		spec[13] = 1 // DYN
	} else {
		spec[4], spec[5], spec[6], spec[7] = b2u(g.transA), b2u(g.transB), g.aMode, g.bMode
	}
	maxInv := int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0]))
	switch kind {
	case mmTexel:
		// WG invocations cover TM rows of TN columns each. Measured on
		// lavapipe (fp16 1024^3, 2 s per tile, noisy to +-15%): 16 rows
		// of 8 columns reuse each texel most within its registers, and 32
		// invocations (four SIMD rows) edge out 8 and 16; fp32 fetches
		// half as many elements per texel and gains from 16 columns
		// (24 against 17 GFLOP/s). Thin problems (M <= 16) take 8 rows and
		// 8 invocations, so that no fetched row is wasted and the few
		// workgroups spread over the CPU's threads.
		tm, tn, wg := 16, 8, 32
		if g.aMode == mmModeF32 && g.bMode == mmModeF32 {
			tn = 16
		}
		if g.m <= 16 {
			tm, tn, wg = 8, 8, 8
		}
		wg = min(wg, maxInv)
		spec[0], spec[1], spec[2] = uint32(wg), uint32(tm), uint32(tn)
		spec[4], spec[5], spec[6], spec[7] = b2u(g.transA), b2u(g.transB), g.aMode, g.bMode
		delete(spec, 13)
		return mmPlan{"matmul_tex", spec, tm, tn * wg, false}
	case mmRegister:
		// One 8x8 tile per invocation (4x4 for small problems), 8x8
		// invocations per workgroup.
		t := 8
		if small {
			t = 4
		}
		spec[0], spec[1], spec[2], spec[8] = 64, uint32(t), uint32(t), 8
		return mmPlan{"matmul_reg", spec, 8 * t, 8 * t, small}
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
		wg := max(s, min(8*s, 256, maxInv)/s*s)
		spec[0], spec[1], spec[2], spec[9] = uint32(wg), uint32(tm), uint32(tn), uint32(s)
		return mmPlan{"matmul_sg", spec, wg / s * tm, s * tn, small}
	}
	// Shared memory: 64x64 tiles of 4x4 per invocation (256 invocations)
	// where the device allows, else 32x32.
	bm, t, bk := 64, 4, 16
	if small || maxInv < 256 || int(info.MaxSharedMemory) < 2*bm*bk*4 {
		bm = 32
	}
	spec[0], spec[1], spec[2] = uint32(bm/t*bm/t), uint32(t), uint32(t)
	spec[10], spec[11], spec[12] = uint32(bm), uint32(bm), uint32(bk)
	return mmPlan{"matmul_shared", spec, bm, bm, small}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
