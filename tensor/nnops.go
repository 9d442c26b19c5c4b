package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The ops of neural-network layers and their backward passes: dropout, the
// spreading of a one-element upstream gradient, gradient accumulation,
// cross-entropy and layer normalisation. Package nn builds its graph ops and
// backward rules on them.

// Dropout returns x with each element zeroed with probability p and the
// others scaled by 1/(1-p), in x's dtype. The mask is a hash of seed and the
// element's index, the same on every device: Dropout(dy, p, seed), for dy
// of x's shape, applies the same mask, which makes it the gradient of
// Dropout(x, p, seed). p must be in [0, 1); it panics with a *UsageError
// otherwise.
func Dropout(x *Tensor, p float32, seed uint32) *Tensor {
	threshold := checkDropout("Dropout", x, p)
	out := newOut(x.dev, x.dtype, x.shape, x)
	recordInto("Dropout", func() error {
		spec := kernels.DropoutSpec{In0DT: x.dtype.code(), OutDT: x.dtype.code()}
		push := kernels.DropoutPush{N: uint32(x.n), Seed: seed, Threshold: threshold, Scale: 1 / (1 - p)}
		bind := kernels.DropoutBind{X: x.buf, Out: out.buf}
		if texelsOn(out, x) {
			return kernels.DropoutForms.Texel(x.dev, octs(out), spec, push, bind)
		}
		return kernels.DropoutForms.Plain(x.dev, pairGroups(x.dev, x.n), spec, push, bind)
	}, out)
	return out
}

// DropoutSeeded is Dropout with a seed the device reads when the work runs:
// the mask of Dropout(x, p, s*0x9E3779B9 + k), s the bits of seed's one
// Int32 element at that time. A step captured by a Replayer thus draws the
// masks of the seed written into seed before each replay, where Dropout's
// seed would be recorded once. It panics as Dropout does, and with a
// *ShapeError or *DTypeError unless seed is one Int32 element.
func DropoutSeeded(x *Tensor, p float32, seed *Tensor, k uint32) *Tensor {
	sameDevice("DropoutSeeded", x, seed)
	if seed.n != 1 {
		shapePanic("DropoutSeeded", seed.shape, []int{1}, "want a one-element seed")
	}
	if seed.dtype != Int32 {
		panic(&DTypeError{Op: "DropoutSeeded", Got: seed.dtype, Want: "an int32 seed"})
	}
	threshold := checkDropout("DropoutSeeded", x, p)
	out := newOut(x.dev, x.dtype, x.shape, x, seed)
	recordInto("DropoutSeeded", func() error {
		spec := kernels.DropoutSeededSpec{In0DT: x.dtype.code(), OutDT: x.dtype.code()}
		push := kernels.DropoutSeededPush{N: uint32(x.n), K: k, Threshold: threshold, Scale: 1 / (1 - p)}
		bind := kernels.DropoutSeededBind{X: x.buf, Seed: seed.buf, Out: out.buf}
		if texelsOn(out, x) {
			return kernels.DropoutSeededForms.Texel(x.dev, octs(out), spec, push, bind)
		}
		return kernels.DropoutSeededForms.Plain(x.dev, pairGroups(x.dev, x.n), spec, push, bind)
	}, out)
	return out
}

// checkDropout panics unless x is floating point and p in [0, 1), and
// returns the hash threshold below which an element is dropped.
func checkDropout(op string, x *Tensor, p float32) uint32 {
	sameDevice(op, x)
	checkFloating(op, x.dtype, x)
	if !(p >= 0 && p < 1) {
		usagePanic(op, "probability %g is not in [0, 1)", p)
	}
	return uint32(math.Min(float64(p)*4294967296.0, 4294967295))
}

// ScaleByItem returns alpha * s[0] * x in dtype dt, for a one-element
// Float32 s whose value stays on the device: the backward of a loss whose
// upstream gradient is such a tensor. It panics unless s has one Float32
// element.
func ScaleByItem(x, s *Tensor, alpha float32, dt DType) *Tensor {
	sameDevice("ScaleByItem", x, s)
	checkItem("ScaleByItem", s)
	checkFloating("ScaleByItem", dt, x)
	return broadcastScale(x, s, alpha, dt, x.shape, false)
}

// BroadcastItem returns a tensor of the given shape and dtype dt whose every
// element is alpha * s[0], for a one-element Float32 s whose value stays on
// the device: the backward of a sum or a mean. It panics unless s has one
// Float32 element.
func BroadcastItem(s *Tensor, alpha float32, dt DType, shape ...int) *Tensor {
	sameDevice("BroadcastItem", s)
	checkItem("BroadcastItem", s)
	checkFloating("BroadcastItem", dt)
	checkShape("BroadcastItem", shape)
	return broadcastScale(s, s, alpha, dt, shape, true)
}

// broadcastScale records broadcast_scale over x (read unless noX) into a
// new tensor of shape; with noX, x only stands in for the binding.
func broadcastScale(x, s *Tensor, alpha float32, dt DType, shape []int, noX bool) *Tensor {
	out := newOut(s.dev, dt, shape, x, s)
	recordInto("broadcast_scale", func() error {
		return kernels.BroadcastScale(s.dev, pairGroups(s.dev, out.n),
			kernels.BroadcastScaleSpec{In0DT: x.dtype.code(), OutDT: dt.code(), NoX: noX},
			kernels.BroadcastScalePush{N: uint32(out.n), Alpha: alpha},
			kernels.BroadcastScaleBind{X: x.buf, S: s.buf, Out: out.buf})
	}, out)
	return out
}

// Accumulate adds src into dst in place, dst += src, for a Float32 dst and
// a src of dst's shape in any float dtype: how autograd sums the gradients
// of a parameter. Like every in-place op it returns an error (an input's,
// or a failure to record) instead of making dst carry one, so a gradient is
// never replaced by an error carrier.
func Accumulate(dst, src *Tensor) error {
	sameDevice("Accumulate", dst, src)
	if dst.dtype != Float32 {
		panic(&DTypeError{Op: "Accumulate", Got: dst.dtype, Want: "a float32 destination"})
	}
	checkFloating("Accumulate", dst.dtype, src)
	if !slices.Equal(dst.shape, src.shape) {
		shapePanic("Accumulate", dst.shape, src.shape, "dst and src differ")
	}
	if err := firstErr(src, dst); err != nil {
		return err
	}
	if texelsOn(dst, src, dst) {
		return opErr("Accumulate", kernels.AccumulateTex(dst.dev, octs(dst), kernels.AccumulateTexSpec{In0DT: src.dtype.code()},
			kernels.AccumulateTexPush{N: uint32(dst.n)}, kernels.AccumulateTexBind{Src: src.buf, Dst: dst.buf, DstTex: dst.buf}))
	}
	return opErr("Accumulate", kernels.Accumulate(dst.dev, ewiseGrid(dst, src.dtype == Float32),
		kernels.AccumulateSpec{In0DT: src.dtype.code()}, kernels.AccumulatePush{N: uint32(dst.n)},
		kernels.AccumulateBind{Src: src.buf, Dst: dst.buf}))
}

// NLL returns the negative log-likelihood of each row of logp [N, C]
// (Float32 log-probabilities, as LogSoftmax gives) at its label,
// out[r] = -logp[r, labels[r]], as a Float32 tensor [N]. labels holds N
// Int32 class indices; labels of another dtype panic with a *DTypeError. A
// label outside [0, C) gives NaN in its row and raises the device's assert:
// the next read of any tensor on the device returns an *AssertError
// matching ErrBadTarget, and until then optimizer steps without a skip flag
// of their own are skipped (see AssertError).
func NLL(logp, labels *Tensor) *Tensor {
	rows, cols := checkLogProbs("NLL", logp, labels)
	out := newOut(logp.dev, Float32, []int{rows}, logp, labels)
	recordInto("NLL", func() error {
		return withAssert(logp.dev, func(rec *vk.Buffer) error {
			return kernels.Nll(logp.dev, kernels.Groups(logp.dev, rows), kernels.NllSpec{AssertOp: assertNLL},
				kernels.NllPush{Rows: uint32(rows), Cols: uint32(cols)},
				kernels.NllBind{L: logp.buf, Y: labels.buf, Out: out.buf, Assert: rec})
		})
	}, out)
	return out
}

// CrossEntropyBackward returns the gradient, with respect to the logits, of
// alpha times the summed cross-entropy of rows against labels, times the
// upstream gradient dy (one Float32 element): alpha * dy[0] *
// (exp(logp) - onehot(labels)), a Float32 tensor [N, C], from the
// log-probabilities logp [N, C] that the forward pass computed. alpha is
// 1/N for a mean over rows, 1 for a sum. Labels are Int32 class indices, as
// NLL takes them; the row of a label outside [0, C) is NaN in every class,
// whatever dy, and raises the device's assert as NLL does.
func CrossEntropyBackward(logp, labels, dy *Tensor, alpha float32) *Tensor {
	return CrossEntropyBackwardAs(logp, labels, dy, alpha, Float32)
}

// CrossEntropyBackwardAs is CrossEntropyBackward with the gradient stored
// as dt (Float32, Float16 or BFloat16), rounded once from the fp32 value,
// bit for bit Cast(CrossEntropyBackward(...), dt) without its kernel: the
// gradient of fp16 logits under autocast.
func CrossEntropyBackwardAs(logp, labels, dy *Tensor, alpha float32, dt DType) *Tensor {
	rows, cols := checkLogProbs("CrossEntropyBackward", logp, labels)
	sameDevice("CrossEntropyBackward", logp, dy)
	checkItem("CrossEntropyBackward", dy)
	checkFloating("CrossEntropyBackward", dt)
	out := newOut(logp.dev, dt, logp.shape, logp, labels, dy)
	recordInto("CrossEntropyBackward", func() error {
		return withAssert(logp.dev, func(rec *vk.Buffer) error {
			return kernels.CrossEntropyBackward(logp.dev, pairGroups(logp.dev, rows*cols),
				kernels.CrossEntropyBackwardSpec{OutDT: dt.code(), AssertOp: assertCrossEntropyBackward},
				kernels.CrossEntropyBackwardPush{Rows: uint32(rows), Cols: uint32(cols), Alpha: alpha},
				kernels.CrossEntropyBackwardBind{L: logp.buf, Y: labels.buf, S: dy.buf, Out: out.buf, Assert: rec})
		})
	}, out)
	return out
}

// checkLogProbs panics unless logp is Float32 [N, C] and labels N Int32
// class indices, on one device, and returns N and C.
func checkLogProbs(op string, logp, labels *Tensor) (rows, cols int) {
	sameDevice(op, logp, labels)
	if len(logp.shape) != 2 || labels.n != logp.shape[0] {
		shapePanic(op, logp.shape, labels.shape, "want log-probabilities [N, C] and N labels")
	}
	if logp.dtype != Float32 {
		panic(&DTypeError{Op: op, Got: logp.dtype, Want: "float32 log-probabilities"})
	}
	if labels.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: labels.dtype, Want: "int32 class indices as labels"})
	}
	return logp.shape[0], logp.shape[1]
}

// LayerNorm normalises x [..., C] over its last axis and applies gamma and
// beta (C elements each): y = (x - mean) / sqrt(var + eps) * gamma + beta,
// with the biased variance, all Float32. beta may be nil for a layer
// without bias (nanoGPT's bias=False). It also returns stats [rows, 2],
// each row's mean and 1/sqrt(var + eps), which LayerNormBackward takes.
func LayerNorm(x, gamma, beta *Tensor, eps float32) (y, stats *Tensor) {
	ins := []*Tensor{x, gamma}
	if beta != nil {
		ins = append(ins, beta)
	}
	sameDevice("LayerNorm", ins...)
	rows, cols := lastAxis(x)
	if gamma.n != cols || (beta != nil && beta.n != cols) {
		var bs []int
		if beta != nil {
			bs = beta.shape
		}
		shapePanic("LayerNorm", x.shape, gamma.shape, "gamma and beta must have the last axis's %d elements (beta %v)", cols, bs)
	}
	checkFloat32("LayerNorm", ins...)
	y = newOut(x.dev, Float32, x.shape, ins...)
	stats = newOut(x.dev, Float32, []int{rows, 2}, ins...)
	recordInto("LayerNorm", func() error {
		b := gamma.buf // bound but not read without beta
		if beta != nil {
			b = beta.buf
		}
		local, seg := normLocal(x.dev, cols)
		if seg == 1 && cols%4 == 0 && texelsOn(y, x, gamma, beta) { // its deterministic path is layer_norm's
			return kernels.LayerNormTex(x.dev, texRowGrid(x.dev, rows, 3*(cols/4)), kernels.LayerNormTexSpec{LocalSizeX: texLocal, NoBeta: beta == nil},
				kernels.LayerNormTexPush{Rows: uint32(rows), Cols: uint32(cols), Eps: eps},
				kernels.LayerNormTexBind{X: x.buf, G: gamma.buf, B: b, Y: y.buf, Stats: stats.buf})
		}
		return kernels.LayerNorm(x.dev, segGrid(rows, local, seg), kernels.LayerNormSpec{LocalSizeX: local, NoBeta: beta == nil, Seg: seg},
			kernels.LayerNormPush{Rows: uint32(rows), Cols: uint32(cols), Eps: eps},
			kernels.LayerNormBind{X: x.buf, G: gamma.buf, B: b, Y: y.buf, Stats: stats.buf})
	}, y, stats)
	return y, stats
}

// LayerNormBackward returns the gradients of LayerNorm's inputs x, gamma
// and beta from dy, the gradient of its output, and the stats it returned:
// dx of x's shape and dgamma, dbeta [C], all Float32.
func LayerNormBackward(dy, x, gamma, stats *Tensor) (dx, dgamma, dbeta *Tensor) {
	dx, dgamma = LayerNormBackwardNoBias(dy, x, gamma, stats)
	rows, cols := lastAxis(x)
	dy2 := dy
	if len(dy.shape) != 2 {
		dy2 = Reshape(dy, rows, cols)
		defer dy2.Release()
	}
	dbeta = SumAxis(dy2, 0)
	return dx, dgamma, dbeta
}

// LayerNormBackwardNoBias is LayerNormBackward for a LayerNorm without
// beta: it returns dx and dgamma only.
func LayerNormBackwardNoBias(dy, x, gamma, stats *Tensor) (dx, dgamma *Tensor) {
	sameDevice("LayerNormBackward", dy, x, gamma, stats)
	rows, cols := lastAxis(x)
	if !slices.Equal(dy.shape, x.shape) {
		shapePanic("LayerNormBackward", dy.shape, x.shape, "dy must have x's shape")
	}
	if gamma.n != cols || stats.n != 2*rows {
		shapePanic("LayerNormBackward", gamma.shape, stats.shape, "want gamma [%d] and stats [%d 2]", cols, rows)
	}
	checkFloat32("LayerNormBackward", dy, x, gamma, stats)
	dx = newOut(x.dev, Float32, x.shape, dy, x, gamma, stats)
	dyx := newOut(x.dev, Float32, []int{rows, cols}, dy, x, gamma, stats) // dy * xhat
	defer dyx.Release()                                                   // the device keeps it until the sum has run
	recordInto("LayerNormBackward", func() error {
		local, seg := normLocal(x.dev, cols)
		if seg == 1 && cols%4 == 0 && !x.dev.Deterministic() && texelsOn(dx, dy, x, gamma) {
			return kernels.LayerNormBackwardTex(x.dev, texRowGrid(x.dev, rows, 2*(cols/4)), kernels.LayerNormBackwardTexSpec{LocalSizeX: texLocal},
				kernels.LayerNormBackwardTexPush{Rows: uint32(rows), Cols: uint32(cols)},
				kernels.LayerNormBackwardTexBind{Dy: dy.buf, X: x.buf, G: gamma.buf, Stats: stats.buf, Dx: dx.buf, Dyx: dyx.buf})
		}
		return kernels.LayerNormBackward(x.dev, segGrid(rows, local, seg), kernels.LayerNormBackwardSpec{LocalSizeX: local, Seg: seg},
			kernels.LayerNormBackwardPush{Rows: uint32(rows), Cols: uint32(cols)},
			kernels.LayerNormBackwardBind{Dy: dy.buf, X: x.buf, G: gamma.buf, Stats: stats.buf, Dx: dx.buf, Dyx: dyx.buf})
	}, dx, dyx)
	dgamma = SumAxis(dyx, 0)
	return dx, dgamma
}

// lastAxis returns x's shape as rows of its last axis.
func lastAxis(x *Tensor) (rows, cols int) {
	cols = 1
	if len(x.shape) > 0 {
		cols = x.shape[len(x.shape)-1]
	}
	return x.n / cols, cols
}

// rowLocal is the workgroup size of a kernel with one workgroup per row:
// the smallest power of two that covers the row, within the device's size.
// A full workgroup over a short row spends its time in barriers (on
// SwiftShader, 30 ms a dispatch for rows of 16).
func rowLocal(d *vk.Device, cols int) uint32 {
	local, n := kernels.LocalSize(d), uint32(1)
	for n < uint32(cols) && 2*n <= local {
		n *= 2
	}
	return n
}

// normLocal is the workgroup size and the segment (invocations per row) of
// the layer-norm kernels: on a CPU driver, where a barrier costs far more
// than a row's loop, one invocation per row (for rows up to 4096 long);
// elsewhere a workgroup per row, as rowLocal sizes it. In deterministic
// mode one invocation per row on every device, whose sums then have the
// same order everywhere.
func normLocal(d *vk.Device, cols int) (local, seg uint32) {
	if d.Deterministic() {
		return kernels.LocalSize(d), 1
	}
	if formsOf(d).rowPerInvocation && cols <= rowOwnMax {
		return kernels.LocalSize(d), 1
	}
	n := rowLocal(d, cols)
	return n, n
}

// segGrid is the grid of a kernel whose workgroups of local invocations
// reduce rows in segments of seg (the kernel loops past the limit).
func segGrid(rows int, local, seg uint32) [3]uint32 {
	per := int(local / seg)
	return [3]uint32{uint32(min((rows+per-1)/per, 65535)), 1, 1}
}

// rowGrid is the grid of a kernel with one workgroup per row (the kernel
// loops over rows past the limit).
func rowGrid(rows int) [3]uint32 { return [3]uint32{uint32(min(rows, 65535)), 1, 1} }

// pairGroups is the grid of a kernel with one invocation per two elements,
// so that each 16-bit output word has one writer.
func pairGroups(d *vk.Device, n int) [3]uint32 { return kernels.Groups(d, (n+1)/2) }

// checkItem panics unless s is one Float32 element, as the kernels that
// read a scalar from the device take it.
func checkItem(op string, s *Tensor) {
	if s.n != 1 {
		shapePanic(op, s.shape, []int{1}, "want a one-element tensor")
	}
	if s.dtype != Float32 {
		panic(&DTypeError{Op: op, Got: s.dtype, Want: "a float32 one-element tensor"})
	}
}

// checkFloat32 panics unless every tensor is Float32.
func checkFloat32(op string, ts ...*Tensor) {
	for _, t := range ts {
		if t.dtype != Float32 {
			panic(&DTypeError{Op: op, Got: t.dtype, Want: "float32"})
		}
	}
}

// recordInto records a kernel, launch, that writes outs. If one of them
// already carries an error (an input's, or its own allocation's) nothing is
// recorded and every out carries that error; a failure to record makes
// every out carry the failure.
func recordInto(op string, launch func() error, outs ...*Tensor) {
	var err error
	for _, o := range outs {
		if o.err != nil {
			err = o.err
			break
		}
	}
	if err == nil {
		err = opErr(op, launch())
	}
	if err != nil {
		for _, o := range outs {
			if o.err == nil {
				o.fail(err)
			}
		}
	}
}

// opErr wraps a failure to record op.
func opErr(op string, err error) error {
	if err != nil {
		return fmt.Errorf("tensor: %s: %w", op, err)
	}
	return nil
}

// firstErr returns the first error the tensors carry.
func firstErr(ts ...*Tensor) error {
	for _, t := range ts {
		if t != nil && t.err != nil {
			return t.err
		}
	}
	return nil
}
