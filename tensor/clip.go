package tensor

import (
	"math"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Gradient clipping over many tensors at once, on the device: like the
// scaler's unscale they are reached through a BlockTable, one dispatch per
// memory block, and nothing waits for the host. The norm is reduced in a
// fixed order (per chunk of the table, then over the chunks), so the same
// gradients give the same bits every run.

// clipTensors checks xs for an in-place op over many tensors: live Float32
// tensors on one device, none twice (it would be updated twice). nil
// entries are skipped; at least one must remain.
func clipTensors(op string, xs []*Tensor) []*Tensor {
	var cells []*Tensor
	seen := make(map[*Tensor]int, len(xs))
	for i, x := range xs {
		if x == nil {
			continue
		}
		if j, ok := seen[x]; ok {
			usagePanic(op, "tensor %d is tensor %d again: it would be updated twice", i, j)
		}
		seen[x] = i
		cells = append(cells, x)
	}
	if len(cells) == 0 {
		usagePanic(op, "no tensors")
	}
	sameDevice(op, cells...)
	checkFloat32(op, cells...)
	return cells
}

// ClipNorm scales the tensors xs in place so that their total L2 norm (of
// all their elements together) is at most maxNorm, as PyTorch's
// clip_grad_norm_: every element is multiplied by min(1, maxNorm/(norm +
// eps)), computed on the device (not at all when that is 1, so bits stay).
// It returns the total norm before clipping, a Float32 [1] tensor, for
// logs. A NaN or infinite norm keeps the tensors non-finite, as in PyTorch:
// an infinite norm multiplies by 0, so an infinite element becomes NaN. The
// sum of squares is in fp32: a norm above about 1.8e19 overflows to +inf.
//
// xs must be Float32 tensors on one device, none twice (nil ones are
// skipped), else it panics; maxNorm must be positive (+inf clips nothing)
// and eps non-negative. tab keeps the tables that reach the tensors while
// their memory stays (see BlockTable); the caller closes it. Like every
// in-place op it returns errors (a tensor's, or a failed recording) and
// never makes a tensor of xs carry one; the norm then carries it too.
func ClipNorm(xs []*Tensor, maxNorm, eps float32, tab *BlockTable) (*Tensor, error) {
	const op = "ClipNorm"
	cells := clipTensors(op, xs)
	if !(maxNorm > 0) || !(eps >= 0) || math.IsInf(float64(eps), 0) {
		usagePanic(op, "max norm %g and eps %g: want a positive max norm and a finite eps >= 0", maxNorm, eps)
	}
	d := cells[0].dev
	norm := New(d, Float32, 1)
	fail := func(err error) (*Tensor, error) {
		if norm.err == nil {
			norm.fail(err)
		}
		return norm, err
	}
	if err := firstErr(cells...); err != nil {
		return fail(err)
	}
	if err := norm.err; err != nil {
		return norm, err
	}
	if err := tab.t.update(d, &unscaleLayout, cells); err != nil {
		return fail(err)
	}
	total := 0
	for _, g := range tab.t.groups {
		total += g.chunks
	}
	part, coef := New(d, Float32, total), New(d, Float32, 1)
	defer part.Release() // the device keeps them until the passes have run
	defer coef.Release()
	if err := firstErr(part, coef); err != nil {
		return fail(err)
	}
	local := uint32(reduceLocal(norm))
	base := 0
	for _, g := range tab.t.groups {
		err := kernels.GradSumsq(d, g.grid(), kernels.GradSumsqSpec{LocalSizeX: local},
			kernels.GradSumsqPush{Nchunks: uint32(g.chunks), Base: uint32(base)},
			kernels.GradSumsqBind{Data: g.bind[0], Table: g.table, Partial: part.buf})
		if err != nil {
			return fail(opErr(op, err))
		}
		base += g.chunks
	}
	err := kernels.ClipCoef(d, [3]uint32{1, 1, 1}, kernels.ClipCoefSpec{LocalSizeX: local},
		kernels.ClipCoefPush{N: uint32(total), MaxNorm: maxNorm, Eps: eps},
		kernels.ClipCoefBind{Partial: part.buf, Norm: norm.buf, Coef: coef.buf})
	if err != nil {
		return fail(opErr(op, err))
	}
	if err := scaleTable(d, tab, coef); err != nil {
		return fail(opErr(op, err))
	}
	return norm, nil
}

// scaleTable multiplies the tensors of tab by coef[0] in place.
func scaleTable(d *vk.Device, tab *BlockTable, coef *Tensor) error {
	for _, g := range tab.t.groups {
		err := kernels.GradScale(d, g.grid(), kernels.GradScaleSpec{}, kernels.GradScalePush{Nchunks: uint32(g.chunks)},
			kernels.GradScaleBind{Data: g.bind[0], Table: g.table, Coef: coef.buf})
		if err != nil {
			return err
		}
	}
	return nil
}

// ClampValues clamps every element of the tensors xs to [-clip, clip] in
// place, as PyTorch's clip_grad_value_, except that a NaN or an infinity is
// left as it is: clamping an overflow to a finite value would hide it from
// the step that follows. xs are as ClipNorm takes them; clip must be
// non-negative (and may be +inf, which clamps nothing), else it panics.
// Errors are returned, never carried by a tensor of xs.
func ClampValues(xs []*Tensor, clip float32, tab *BlockTable) error {
	const op = "ClampValues"
	cells := clipTensors(op, xs)
	if !(clip >= 0) {
		usagePanic(op, "clip %g: want a value >= 0", clip)
	}
	if err := firstErr(cells...); err != nil {
		return err
	}
	d := cells[0].dev
	if err := tab.t.update(d, &unscaleLayout, cells); err != nil {
		return err
	}
	for _, g := range tab.t.groups {
		err := kernels.GradClamp(d, g.grid(), kernels.GradClampSpec{}, kernels.GradClampPush{Nchunks: uint32(g.chunks), Clip: clip},
			kernels.GradClampBind{Data: g.bind[0], Table: g.table})
		if err != nil {
			return opErr(op, err)
		}
	}
	return nil
}
