package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// attnMaxHead is the largest head size the attention kernels stage through
// shared memory: two blocks of 16 rows of 128 fp32 values fill the 16 KiB
// every Vulkan device has (HD4_MAX vec4s in shaders/include/attention.glsl;
// the lse and D rows of a block take 128 bytes more in attention_bwd_dkv).
const attnMaxHead = 128

// attnBlock is the kernels' BK: rows staged per step.
const attnBlock = 16

// attnRows is the rows (invocations) of a workgroup. A workgroup runs to its
// last row's diagonal, so fewer rows waste less of the causal triangle;
// on lavapipe 32 took about a quarter less CPU than 64 at T=64, 16 more.
const attnRows = 32

// CausalAttention is causal multi-head self-attention with an online
// softmax (FlashAttention's forward), from qkv [batch*T, 3C] (or
// [batch, T, 3C]) holding q | k | v along the last axis, as nanoGPT's
// c_attn(x).split(n_embd, dim=2), head h taking columns h*hd..(h+1)*hd of
// each of q, k and v (hd = C/heads). It returns y, of qkv's leading shape
// with C columns and heads merged (nanoGPT's y.transpose(1, 2).view(B, T,
// C)), in qkv's dtype, with
//
//	y[t] = sum over s <= t of softmax_s(scale * q_t . k_s) v_s
//
// per head, computed in fp32; and lse, Float32 [batch, heads, T], each
// row's log-sum-exp of scale * q_t . k_s, which CausalAttentionBackward
// takes instead of the probabilities.
//
// On CPU drivers other than SwiftShader, for head sizes up to 64 that are
// whole 16-byte texels, it runs the texel kernels (attention_tex.go), with
// the same math; elsewhere the shared-memory kernels.
//
// It panics with a *DTypeError for a qkv that is not floating, a
// *ShapeError when the last axis is not a multiple of 3*heads or the rows
// are not batch sequences, and a *UsageError for a head size above 128 or
// an odd head size in a 16-bit dtype, or batch or heads below 1. On
// lavapipe, whose kernels stop after 65535 loop iterations, a sequence
// past the kernels' reach (several thousand rows) makes the results carry
// an error wrapping ErrLoopLimit.
func CausalAttention(qkv *Tensor, batch, heads int, scale float32) (y, lse *Tensor) {
	const op = "CausalAttention"
	sameDevice(op, qkv)
	a := attnCheck(op, qkv, batch, heads)
	y = newOut(qkv.dev, qkv.dtype, a.outShape(qkv), qkv)
	lse = newOut(qkv.dev, Float32, []int{batch, heads, a.t}, qkv)
	if a.tex && a.texLoops(y, op) {
		recordInto(op, func() error {
			return kernels.AttentionTexFwd(qkv.dev, a.texGroupsFwd(),
				kernels.AttentionTexFwdSpec{LocalSizeX: attnTexRows, QkvDT: qkv.dtype.code(), Hd: uint32(a.hd), Tq: attnTexFwdRows}, a.push(scale),
				kernels.AttentionTexFwdBind{Tqkv: qkv.buf, Y: y.buf, Lse: lse.buf})
		}, y, lse)
	} else if !a.tex && a.loops(y, op) {
		recordInto(op, func() error {
			return kernels.AttentionFwd(qkv.dev, a.groups(),
				kernels.AttentionFwdSpec{LocalSizeX: a.local, QkvDT: qkv.dtype.code(), Hd4Max: a.hd4cap}, a.push(scale),
				kernels.AttentionFwdBind{Qkv: qkv.buf, Y: y.buf, Lse: lse.buf})
		}, y, lse)
	} else if lse.err == nil {
		lse.fail(y.err)
	}
	return y, lse
}

// CausalAttentionBackward returns dqkv, the gradient of CausalAttention's
// qkv, in qkv's shape and dtype, from its inputs qkv, its outputs y and lse
// and dy, the gradient of y (y's shape and dtype). It runs two kernels, one
// for dq (looping over each query row's keys) and one for dk and dv
// (looping over each key row's queries): every element has one writer, so
// the result has the same bits on every run. It panics as
// CausalAttention does, and with a *ShapeError or *DTypeError when y, dy or
// lse are not what CausalAttention returns for qkv.
func CausalAttentionBackward(qkv, y, lse, dy *Tensor, batch, heads int, scale float32) *Tensor {
	const op = "CausalAttentionBackward"
	sameDevice(op, qkv, y, lse, dy)
	a := attnCheck(op, qkv, batch, heads)
	ys := a.outShape(qkv)
	for _, o := range []*Tensor{y, dy} {
		if !slices.Equal(o.shape, ys) {
			shapePanic(op, qkv.shape, o.shape, "y and dy must have shape %v", ys)
		}
		if o.dtype != qkv.dtype {
			panic(&DTypeError{Op: op, Got: o.dtype, Want: fmt.Sprintf("y and dy in qkv's %s", qkv.dtype)})
		}
	}
	if !slices.Equal(lse.shape, []int{batch, heads, a.t}) {
		shapePanic(op, qkv.shape, lse.shape, "lse must be [%d %d %d]", batch, heads, a.t)
	}
	checkFloat32(op, lse)
	dqkv := newOut(qkv.dev, qkv.dtype, qkv.shape, qkv, y, lse, dy)
	dd := newOut(qkv.dev, Float32, []int{batch, heads, a.t}, qkv, y, lse, dy) // dy . y per row
	defer dd.Release()                                                        // the device keeps it until the kernels have run
	push := a.push(scale)
	if a.tex && (lse.buf.TexelsFit() && y.buf.TexelsFit() && dy.buf.TexelsFit() && dd.buf.TexelsFit()) {
		if !a.texLoops(dqkv, op) {
			return dqkv
		}
		spec := kernels.AttentionTexDqSpec{LocalSizeX: attnTexRows, QkvDT: qkv.dtype.code(), Hd: uint32(a.hd)}
		recordInto(op, func() error {
			return kernels.AttentionTexDq(qkv.dev, a.texGroups(), spec, push,
				kernels.AttentionTexDqBind{Tqkv: qkv.buf, Ty: y.buf, Tdy: dy.buf, Lse: lse.buf, Dqkv: dqkv.buf, Dd: dd.buf})
		}, dqkv, dd)
		recordInto(op, func() error {
			return kernels.AttentionTexDkv(qkv.dev, a.texGroups(), kernels.AttentionTexDkvSpec(spec), push,
				kernels.AttentionTexDkvBind{Tqkv: qkv.buf, Tdy: dy.buf, Tlse: lse.buf, Tdd: dd.buf, Dqkv: dqkv.buf})
		}, dqkv)
		return dqkv
	}
	a.tex = false
	if !a.loops(dqkv, op) {
		return dqkv
	}
	recordInto(op, func() error {
		return kernels.AttentionBwdDq(qkv.dev, a.groups(),
			kernels.AttentionBwdDqSpec{LocalSizeX: a.local, QkvDT: qkv.dtype.code(), Hd4Max: a.hd4cap}, push,
			kernels.AttentionBwdDqBind{Qkv: qkv.buf, Y: y.buf, Dy: dy.buf, Lse: lse.buf, Dqkv: dqkv.buf, Dd: dd.buf})
	}, dqkv, dd)
	recordInto(op, func() error {
		return kernels.AttentionBwdDkv(qkv.dev, a.groups(),
			kernels.AttentionBwdDkvSpec{LocalSizeX: a.local, QkvDT: qkv.dtype.code(), Hd4Max: a.hd4cap}, push,
			kernels.AttentionBwdDkvBind{Qkv: qkv.buf, Dy: dy.buf, Lse: lse.buf, Dd: dd.buf, Dqkv: dqkv.buf})
	}, dqkv)
	return dqkv
}

// attnDims are an attention's sizes and launch shape.
type attnDims struct {
	batch, heads, t, c, hd int
	local                  uint32 // rows per workgroup
	hd4cap                 uint32 // vec4s of the kernels' row arrays: hd/4 up to a power of two, at least 8
	tex                    bool   // the texel kernels (attention_tex.glsl) take it
	dev                    *vk.Device
}

// attnCheck panics unless qkv is a floating [batch*T, 3C] or [batch, T, 3C]
// with C a multiple of heads, within the kernels' head size.
func attnCheck(op string, qkv *Tensor, batch, heads int) attnDims {
	if !qkv.dtype.floating() {
		panic(&DTypeError{Op: op, Got: qkv.dtype, Want: wantFloating + " qkv"})
	}
	if batch < 1 || heads < 1 {
		usagePanic(op, "batch %d and heads %d must be at least 1", batch, heads)
	}
	s := qkv.shape
	want := fmt.Sprintf("want qkv [batch*T, 3*C] or [batch, T, 3*C] with C a multiple of %d heads, batch %d", heads, batch)
	if len(s) < 2 || len(s) > 3 || s[len(s)-1] == 0 || s[len(s)-1]%(3*heads) != 0 {
		shapePanic(op, s, []int{batch, heads}, "%s", want)
	}
	rows := s[0]
	if len(s) == 3 {
		rows = s[0] * s[1]
	}
	if rows == 0 || rows%batch != 0 || (len(s) == 3 && s[0] != batch) {
		shapePanic(op, s, []int{batch, heads}, "%s", want)
	}
	a := attnDims{batch: batch, heads: heads, t: rows / batch, c: s[len(s)-1] / 3, dev: qkv.dev}
	a.hd = a.c / heads
	if a.hd > attnMaxHead {
		usagePanic(op, "head size %d (C %d over %d heads) is above the kernels' %d", a.hd, a.c, heads, attnMaxHead)
	}
	if !qkv.dtype.wide() && a.hd%2 != 0 {
		usagePanic(op, "head size %d is odd: %s needs an even head size", a.hd, qkv.dtype)
	}
	// Rows per workgroup: a multiple of the staged block. One size for
	// every problem, so one pipeline per kernel and dtype.
	a.local = attnRows
	a.hd4cap = 8 // head sizes up to 32 share one pipeline
	for int(a.hd4cap)*4 < a.hd {
		a.hd4cap *= 2
	}
	// Deterministic mode runs the shared-memory kernels on every device:
	// the texel ones sum in another order.
	a.tex = attnTexFits(qkv, a.hd) && !qkv.dev.Deterministic()
	return a
}

// outShape is y's shape: qkv's with C columns.
func (a attnDims) outShape(qkv *Tensor) []int {
	s := slices.Clone(qkv.shape)
	s[len(s)-1] = a.c
	return s
}

func (a attnDims) groups() [3]uint32 {
	return [3]uint32{uint32((a.t + int(a.local) - 1) / int(a.local)), uint32(min(a.batch*a.heads, 65535)), 1}
}

func (a attnDims) push(scale float32) kernels.AttentionPush {
	return kernels.AttentionPush{T: uint32(a.t), Heads: uint32(a.heads), Hd: uint32(a.hd), Bh: uint32(a.batch * a.heads), Scale: scale}
}

// loops makes out carry ErrLoopLimit's error when a kernel invocation would
// loop past the driver's limit, and reports whether out is good to launch
// into. An invocation loops, per (batch, head) it covers, over its row's
// head (loads, stores), and for each staged block over the head twice and
// over its share of the staging.
func (a attnDims) loops(out *Tensor, op string) bool {
	hd4 := (a.hd + 3) / 4
	blocks := (a.t + attnBlock - 1) / attnBlock
	perBlock := 2*hd4 + (attnBlock*hd4+int(a.local)-1)/int(a.local)
	bh := a.batch * a.heads
	iters := (bh + 65534) / 65535 * (2*hd4 + 2*a.hd + blocks*perBlock)
	return checkLoops(out, op, iters, fmt.Sprintf("attention over %d rows with head size %d", a.t, a.hd))
}

// CausalMask returns causal attention's [t, t] Int32 mask: 1 where the key
// comes after the query (column above row), 0 elsewhere, as MaskedFill
// takes it. It is made on the device, with no upload, so a step captured
// by a Replayer may make it. t must be in [1, 65535]; it panics with a
// *UsageError otherwise.
func CausalMask(d *vk.Device, t int) *Tensor {
	if t < 1 || t > 65535 {
		usagePanic("CausalMask", "length %d is not in [1, 65535]", t)
	}
	out := New(d, Int32, t, t)
	recordInto("CausalMask", func() error {
		return kernels.CausalMask(d, groups1D(out, t*t), kernels.CausalMaskSpec{}, kernels.CausalMaskPush{T: uint32(t)},
			kernels.CausalMaskBind{Out: out.buf})
	}, out)
	return out
}
