package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
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
	// C is the accumulator, read when Beta != 0: the output's shape, fp32,
	// fp16 or bf16. It is only read; the result is a new tensor.
	C *Tensor
	// Bias, if set, has shape [N] (fp32, fp16 or bf16) and is added to every
	// row.
	Bias *Tensor
	// Out is the result's dtype: Float32 (the zero value), Float16 or
	// BFloat16.
	Out DType
	// Kind forces the kernel kind, one of vk.MatmulKinds (for tests and
	// benchmarks); empty means the device's (vk.Options.Matmul,
	// VKAMP_MATMUL), else the rule. A kind the device cannot run is an
	// error the result carries. Deterministic mode ignores it.
	Kind string
}

// MatMul returns alpha·op(A)·op(B) + beta·C + bias, where op is the identity
// or the transpose (see MatMulOpts).
//
// A is [..., M, K] and B is [..., K, N] (before op); their leading batch
// dimensions broadcast as in torch.matmul (right-aligned, a dimension of 1
// or a missing one repeats: [B, H, T, D] @ [B, H, D, T], [B, T, D] @ [D, E],
// [T, D] @ [B, D, E]), so that one weight matrix can serve every batch. The
// result is [batch..., M, N] in dtype o.Out, and C, when read, has that
// shape.
//
// A and B may each be fp16, bf16 or fp32; every kernel but matmul_coop
// reads each dtype as it lies (bf16 -> fp32 is exact), and a bf16 operand
// sends GPUs with cooperative matrices to matmul_shared. Products are
// always accumulated in fp32;
// alpha, C and the bias are applied in fp32 and the sum is rounded once to
// the output dtype (to nearest even, overflowing to inf). Infinities and NaNs
// propagate as in IEEE arithmetic: a NaN in row i of op(A) makes row i of
// the result NaN, never 0.
//
// Shapes that do not fit panic with a *ShapeError naming both shapes; an
// unsupported dtype panics with a *DTypeError; nil, released or mixed-device
// tensors panic with a *UsageError. Errors of the device, or a Kind
// it cannot run, are carried by the returned tensor; so is an operand or
// result larger than the device's maxStorageBufferRange where the kernel
// binds it as a storage buffer (an error wrapping vk.ErrInvalidArgument that
// names it, its size and the limit; nothing is allocated or recorded).
//
// The kernel depends on the device: GPUs with cooperative matrices
// (VK_KHR_cooperative_matrix) use them when A and B are fp16, or bf16 where
// the device's take bf16 (any subgroup shape the device lists); GPUs
// otherwise stage tiles in shared memory;
// lavapipe reads A and B as texels (when K and the operands' contiguous
// dimensions are multiples of 8); CPU drivers otherwise use register tiles
// whose rows are shared across a subgroup with subgroupShuffle, or plain
// register tiles when shuffles are missing; SwiftShader uses matmul_quad
// (compile-time tiles, rows shared by quad broadcasts); the forms table
// (forms.go) holds this rule. MatMulOpts.Kind, else the device's
// vk.Options.Matmul or VKAMP_MATMUL (shared, register, subgroup, quad,
// texel, coop or coopmat2: VK_NV_cooperative_matrix2, workgroup-scope
// matrices and tensor loads where the device has them, else its
// subgroup-scope features), forces one. Tiles follow
// a fixed rule per device unless AutotuneMatMul stored faster ones.
func MatMul(a, b *Tensor, o MatMulOpts) *Tensor {
	m := mmCheck("MatMul", a, b, o)
	defer releaseAll(m.expand())
	info := a.dev.Info()
	if err := m.inputErr(); err != nil {
		return &Tensor{dev: a.dev, dtype: o.Out, shape: m.outShape, n: checkShape("MatMul", m.outShape), err: err}
	}
	g, pl, err := mmChoose(info, m.a, m.b, m.g)
	if err == nil {
		err = m.bindable(info, pl, o.Out)
	}
	if limit := loopLimit(a.dev); err == nil && limit != 0 && pl.loops(g.k) > limit {
		// Formatted only here: on every call it cost more than the launch.
		err = loopErr(a.dev, fmt.Sprintf("K = %d", g.k), pl.loops(g.k))
	}
	if err != nil {
		// An input's error comes first; nothing is allocated for a call
		// that cannot run.
		err = fmt.Errorf("tensor: MatMul: %w", err)
		if e := m.inputErr(); e != nil {
			err = e
		}
		return &Tensor{dev: a.dev, dtype: o.Out, shape: m.outShape, n: checkShape("MatMul", m.outShape), err: err}
	}
	out := New(a.dev, o.Out, m.outShape...) // the inputs carry no error
	if out.err != nil {
		return out
	}
	m.g = g
	m.launch(out, pl)
	return out
}

// mmCall is a checked MatMul call: out = alpha·op(a)·op(b) + beta·c + bias,
// where c (nil unless read) and bias may be nil.
type mmCall struct {
	a, b, c, bias *Tensor
	alpha, beta   float32
	g             mmGeom
	bt            mmBatch
	outShape      []int
}

// expand copies out an operand whose batch dimensions broadcast along only
// some of the result's (see mmBatch) and returns the copies (nil where
// none), to be released once the call is recorded (the device keeps them
// until it has run). An array, not a closure: no allocation per call.
func (m *mmCall) expand() (made [2]*Tensor) {
	if m.bt.expandA {
		m.a = mmExpand(m.a, m.bt.shape)
		made[0] = m.a
	}
	if m.bt.expandB {
		m.b = mmExpand(m.b, m.bt.shape)
		made[1] = m.b
	}
	return made
}

// releaseAll releases the tensors of ts that are not nil.
func releaseAll(ts [2]*Tensor) {
	for _, t := range ts {
		t.Release() // nil-safe
	}
}

// mmCheck checks a MatMul call's operands, panicking as MatMul documents.
func mmCheck(op string, a, b *Tensor, o MatMulOpts) mmCall {
	m := mmCall{a: a, b: b, c: o.C, bias: o.Bias, alpha: o.Alpha, beta: o.Beta}
	if m.alpha == 0 {
		m.alpha = 1
	}
	if o.Beta == 0 {
		m.c = nil
	} else if m.c == nil {
		usagePanic(op, "Beta is %g but C is nil", o.Beta)
	}
	in := [4]*Tensor{a, b, m.c, m.bias} // on the stack, unlike inputs()
	n := 2
	for _, t := range in[2:] {
		if t != nil {
			in[n], n = t, n+1
		}
	}
	sameDevice(op, in[:n]...)
	mmCheckDTypes(op, m, o.Out)
	m.g = mmShapes(a, b, o)
	m.bt = mmBroadcast(op, a, b)
	m.outShape = append(append(make([]int, 0, len(m.bt.shape)+2), m.bt.shape...), m.g.m, m.g.n)
	if m.c != nil && !slices.Equal(m.c.shape, m.outShape) {
		shapePanic(op, m.c.shape, m.outShape, "C must have the result's shape")
	}
	if m.bias != nil && !slices.Equal(m.bias.shape, []int{m.g.n}) {
		shapePanic(op, m.bias.shape, []int{m.g.n}, "bias must be [N]")
	}
	return m
}

// bindable returns an error naming the first operand, or the result of
// dtype out, that plan pl binds as a storage buffer although it is larger
// than the device's maxStorageBufferRange: no kernel can reach it. (The
// texel kernel binds A and B as texel buffers, and takes them only where
// they fit.)
func (m mmCall) bindable(info vk.Info, pl mmPlan, out DType) error {
	limit := int64(info.MaxStorageBufferRange)
	check := func(name string, dt DType, shape []int) error {
		if n := dt.bytes(checkShape("MatMul", shape)); n > limit {
			return fmt.Errorf("%s %s%v is %d bytes, over the device's maxStorageBufferRange of %d bytes that one binding can reach (%w)",
				name, dt, shape, n, limit, vk.ErrInvalidArgument)
		}
		return nil
	}
	for i, t := range []*Tensor{m.a, m.b, m.c, m.bias} {
		if t == nil || i < 2 && pl.kind == mmTexel {
			continue
		}
		if err := check([]string{"A", "B", "C", "bias"}[i], t.dtype, t.shape); err != nil {
			return err
		}
	}
	return check("out", out, m.outShape)
}

// inputErr is the first error the tensors the call reads carry, or nil.
func (m mmCall) inputErr() error {
	for _, t := range [...]*Tensor{m.a, m.b, m.c, m.bias} {
		if t != nil && t.err != nil {
			return t.err
		}
	}
	return nil
}

// mmCheckDTypes panics with a *DTypeError unless A and B are fp32, fp16 or
// bf16 (the kernels' operand encodings) and C (when read), the bias and the
// output are fp32, fp16 or bf16 (the epilogue converts by dtype code).
func mmCheckDTypes(op string, m mmCall, out DType) {
	for _, t := range []*Tensor{m.a, m.b} {
		if !t.dtype.floating() {
			panic(&DTypeError{Op: op, Got: t.dtype, Want: "float32, float16 or bfloat16"})
		}
	}
	ds := [3]DType{out, out, out} // on the stack; a repeat checks nothing new
	for i, t := range []*Tensor{m.c, m.bias} {
		if t != nil {
			ds[1+i] = t.dtype
		}
	}
	for _, d := range ds {
		if d != Float32 && d != Float16 && d != BFloat16 {
			panic(&DTypeError{Op: op, Got: d, Want: "float32, float16 or bfloat16"})
		}
	}
}

// launch records the call on plan pl into out.
func (m mmCall) launch(out *Tensor, pl mmPlan) {
	info, g := out.dev.Info(), m.g
	// Unused bindings still need a buffer: the output's, which is always
	// bindable as storage (A may be bound as texels past that range).
	bufs := mmBufs{a: m.a.buf, b: m.b.buf, c: out.buf, bias: out.buf, out: out.buf}
	if m.c != nil {
		bufs.c = m.c.buf
	}
	if m.bias != nil {
		bufs.bias = m.bias.buf
	}
	push := kernels.MatmulPush{M: u32(g.m), N: u32(g.n), K: u32(g.k), BatchA: u32(m.bt.strideA), BatchB: u32(m.bt.strideB),
		Batches: u32(g.batch), Flags: mmFlags(m.c, m.bias, out.dtype, pl), Alpha: m.alpha, Beta: m.beta}
	pl.wideOut = mmWideOut(pl, g, out.dev, out.dtype)
	if pl.kind == mmTexel {
		pl.epi = mmEpi(push.Flags)
	}
	rows, cols := pl.outTile()
	gx, gy := ceilDiv(g.n, cols), ceilDiv(g.m, rows)
	if gx > int(info.MaxWorkgroupCount[0]) || gy > int(info.MaxWorkgroupCount[1]) {
		out.fail(fmt.Errorf("tensor: MatMul: %dx%d workgroups exceed the device's limit %v", gx, gy, info.MaxWorkgroupCount))
		return
	}
	// Batches beyond the z limit go in further dispatches.
	maxZ := int(info.MaxWorkgroupCount[2])
	for b0 := 0; b0 < g.batch && out.err == nil; b0 += maxZ {
		push.Batch0 = u32(b0)
		groups := [3]uint32{u32(gx), u32(gy), u32(min(g.batch-b0, maxZ))}
		if err := pl.record(out.dev, groups, push, bufs); err != nil {
			out.fail(fmt.Errorf("tensor: MatMul: %w", err))
		}
	}
}

// mmWideOut is matmul_tex's WIDE_OUT for plan pl writing dtype out: its epilogue
// stores 64-bit words where every column tile is whole (N a multiple of TN,
// itself a multiple of 8), so that every row segment starts on an 8-byte
// boundary of the output, which starts on one.
func mmWideOut(pl mmPlan, g mmGeom, d *vk.Device, out DType) uint32 {
	if pl.kind != mmTexel || g.n%pl.tile.TN != 0 || pl.tile.TN%8 != 0 || d.Alignment()%8 != 0 {
		return 0
	}
	return 1 + uint32(out.code())
}

// Push-constant flags, as in shaders/include/matmul.glsl: whether C and the
// bias are read, the transposes and operand encodings of a dyn plan, and the
// dtype codes of C, the bias and the output.
const (
	mmFlagC uint32 = 1 << iota
	mmFlagBias
	mmFlagTransA
	mmFlagTransB

	mmFlagAModeShift  = 8
	mmFlagBModeShift  = 10
	mmFlagCDTShift    = 16
	mmFlagBiasDTShift = 18
	mmFlagOutDTShift  = 20
)

// mmEpiKnown marks a texel kernel's EPI as its epilogue's flags, the bits
// of mmEpiFlags (shaders/include/matmul.glsl).
const (
	mmEpiKnown uint32 = 1 << 31
	mmEpiFlags        = mmFlagC | mmFlagBias | 3<<mmFlagCDTShift | 3<<mmFlagBiasDTShift | 3<<mmFlagOutDTShift
)

// mmEpi is the EPI constant of a texel kernel launched with flags: its
// epilogue compiled for the C, bias and output those flags name.
func mmEpi(flags uint32) uint32 { return mmEpiKnown | flags&mmEpiFlags }

// mmFlags is the push constants' flags word for a launch of pl.
func mmFlags(c, bias *Tensor, out DType, pl mmPlan) uint32 {
	flags := uint32(out.code()) << mmFlagOutDTShift
	if c != nil {
		flags |= mmFlagC | uint32(c.dtype.code())<<mmFlagCDTShift
	}
	if bias != nil {
		flags |= mmFlagBias | uint32(bias.dtype.code())<<mmFlagBiasDTShift
	}
	if pl.dyn {
		flags |= b2u(pl.transA)*mmFlagTransA | b2u(pl.transB)*mmFlagTransB |
			pl.aMode<<mmFlagAModeShift | pl.bMode<<mmFlagBModeShift
	}
	return flags
}

// mmChoose picks the kernel family, the operand encodings and the plan for
// problem g on a device: the rule's, with the autotuner's tile if it stored
// one for this device.
func mmChoose(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	if a.dev.Deterministic() {
		return mmChooseDet(info, a, b, g)
	}
	g, pl, err := mmChooseRule(info, a, b, g)
	if err == nil {
		if t, ok := mmTuned(a.dev, pl, g); ok {
			pl = pl.withTile(t)
		}
	}
	return g, pl, err
}

// mmChooseRule is mmChoose without tuning: the deterministic rule.
func mmChooseRule(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	f := formsOf(a.dev)
	kind, forced, err := f.matmulKind(info, g.kind)
	if err != nil {
		return g, mmPlan{}, err
	}
	if kind == mmTexel && !(mmTexelFits(g, a, b) && (forced || g.madds() >= mmTexelMin)) {
		kind = f.matmulSmall
	}
	g.aMode = mmMode(a.dtype, kind, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, kind, !g.transB, g.n, g.k)
	if kind == mmCoopCM2 {
		if pl, ok := mmCoopmat2Plan(info, g); ok {
			return g, pl, nil
		}
		kind = mmCoop // an fp32 operand, or a dtype or tile the device's coopmat2 refuses
	}
	if kind == mmCoop {
		if pl, ok := mmCoopPlan(info, g); ok {
			return g, pl, nil
		}
		kind = mmShared // an fp32 or bf16 operand, or tiles the device's limits refuse
	}
	return g, mmPlanFor(info, kind, g), nil
}

// MatMulKernelName names the kernel MatMul runs for these operands and
// options on their device (matmul_coop, matmul_tex, ...), with
// o.Kind or the device's forced kind and any tuning applied: for benchmarks and diagnostics.
func MatMulKernelName(a, b *Tensor, o MatMulOpts) (string, error) {
	_, pl, err := mmChoose(a.dev.Info(), a, b, mmShapes(a, b, o))
	return pl.kind.String(), err
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
	mmModeBF16  = 3 // one bf16 value per load; not matmul_coop's (its 3 is mmModeF16x8)
)

// mmMode picks an operand's encoding. Pairs need the two halves of every
// word to be neighbours along the dimension the kernel walks: the operand's
// contiguous dimension must have even length (outer for A stored [M, K]
// transposed, or B stored [K, N]; K otherwise). bf16 is read one element
// at a time by every kernel that takes it (not matmul_coop: mmCoopPlan
// refuses it).
func mmMode(d DType, kind mmKind, outerContiguous bool, outer, k int) uint32 {
	switch {
	case d == Float32:
		return mmModeF32
	case d == BFloat16:
		return mmModeBF16
	case kind == mmShared, kind == mmTexel, kind == mmCoop, kind == mmCoopCM2: // element by element, or by texel
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
	kind           string // MatMulOpts.Kind
}

// mmShapes checks the operands' shapes and returns the problem size.
func mmShapes(a, b *Tensor, o MatMulOpts) mmGeom {
	const op = "MatMul"
	ra, rb := len(a.shape), len(b.shape)
	if ra < 2 || rb < 2 {
		shapePanic(op, a.shape, b.shape, "operands need at least 2 dimensions")
	}
	g := mmGeom{batch: mmNumel(mmBroadcast(op, a, b).shape), transA: o.TransA, transB: o.TransB, kind: o.Kind}
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

// mmHasQuad reports whether matmul_quad can run: quad operations in compute
// shaders, and subgroups made of whole quads.
func mmHasQuad(info vk.Info) bool {
	s := info.SubgroupSize
	return info.SubgroupInCompute && slices.Contains(info.SubgroupOperations, "quad") &&
		s >= 4 && s <= 64 && s&(s-1) == 0
}

func mmHasShuffle(info vk.Info) bool {
	s := info.SubgroupSize
	return info.SubgroupInCompute && slices.Contains(info.SubgroupOperations, "shuffle") &&
		s >= 2 && s <= 64 && s&(s-1) == 0
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
