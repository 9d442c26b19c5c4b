package tensor

import (
	"fmt"
	"math"
	"os"
	"slices"

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
// The kernel depends on the device: GPUs stage tiles in shared memory; CPU
// drivers (lavapipe, SwiftShader), where shared memory and barriers only add
// cost, use register tiles whose rows are shared across a subgroup with
// subgroupShuffle, or plain register tiles when shuffles are missing. The
// environment variable VKAMP_MATMUL=shared, register or subgroup forces one.
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
	kind, err := mmKindFor(info)
	if err != nil {
		out.fail(fmt.Errorf("tensor: %s: %w", op, err))
		return out
	}
	g.aMode = mmMode(a.dtype, kind, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, kind, !g.transB, g.n, g.k)
	pl := mmPlanFor(info, kind, g)

	alpha := o.Alpha
	if alpha == 0 {
		alpha = 1
	}
	var flags uint32
	cbind, bbind := a, a // unused bindings still need a buffer
	if c != nil {
		flags |= mmFlagC | mmF16Flag(c.dtype, mmFlagCF16)
		cbind = c
	}
	if o.Bias != nil {
		flags |= mmFlagBias | mmF16Flag(o.Bias.dtype, mmFlagBiasF16)
		bbind = o.Bias
	}
	flags |= mmF16Flag(o.Out, mmFlagOutF16)
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
		out.fail(fmt.Errorf("tensor: %s: %dx%d workgroups exceed the device's limit %v", op, gx, gy, info.MaxWorkgroupCount))
		return out
	}
	// Batches beyond the z limit go in further dispatches.
	maxZ := int(info.MaxWorkgroupCount[2])
	for b0 := 0; b0 < g.batch; b0 += maxZ {
		nz := min(g.batch-b0, maxZ)
		push := []uint32{uint32(g.m), uint32(g.n), uint32(g.k), uint32(g.m * g.k), batchB,
			uint32(b0), uint32(g.batch), flags, math.Float32bits(alpha), math.Float32bits(o.Beta)}
		launch(out, pl.kernel, pl.spec, [3]uint32{uint32(gx), uint32(gy), uint32(nz)}, push, a, b, cbind, bbind, out)
	}
	return out
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
	case kind == mmShared: // stages element by element
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
)

// mmKindFor applies VKAMP_MATMUL, else the rule: GPUs use shared memory;
// CPU drivers use register tiles, with subgroup shuffles when they have them.
// matmul_sg needs full subgroups of the advertised size, which CPU drivers
// give; some GPUs vary the size per shader, so there it is only an
// experiment.
func mmKindFor(info vk.Info) (mmKind, error) {
	switch v := os.Getenv("VKAMP_MATMUL"); v {
	case "":
	case "shared":
		return mmShared, nil
	case "register":
		return mmRegister, nil
	case "subgroup":
		if !mmHasShuffle(info) {
			return 0, fmt.Errorf("VKAMP_MATMUL=subgroup, but %s has no subgroup shuffle in compute shaders", info.Name)
		}
		return mmSubgroup, nil
	default:
		return 0, fmt.Errorf("VKAMP_MATMUL=%q: want shared, register or subgroup", v)
	}
	if info.Type != vk.TypeCPU {
		return mmShared, nil
	}
	if mmHasShuffle(info) {
		return mmSubgroup, nil
	}
	return mmRegister, nil
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
