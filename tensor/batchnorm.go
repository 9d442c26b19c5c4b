package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Batch normalisation over the channel axis of x [N, C, ...] (NCHW for
// BatchNorm2d, [N, C] or [N, C, L] for BatchNorm1d), in fp32, one
// workgroup per channel.

// BatchNormRunning is the state batch normalisation keeps between batches:
// the running mean and variance ([C] Float32 each) and the count of
// batches (one Int32 element, PyTorch's num_batches_tracked). A training
// step updates them in place on the device: running = (1 - momentum) *
// running + momentum * batch, from the unbiased variance of the batch, as
// PyTorch does.
type BatchNormRunning struct {
	Mean, Var, Count *Tensor
}

// BatchNormOpts choose how BatchNorm normalises.
type BatchNormOpts struct {
	// Training normalises with the batch's mean and biased variance, and
	// updates Running when it is set; otherwise Running's statistics are
	// used, and Running must be set.
	Training bool
	Running  *BatchNormRunning
	Momentum float32 // the running statistics' update weight (PyTorch's default is 0.1)
	Eps      float32 // added to the variance (PyTorch's default is 1e-5)
}

// BatchNorm returns y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c]
// over each channel c of x [N, C, ...], with gamma and beta [C], all
// Float32, and stats [C, 2], each channel's mean and 1/sqrt(var + eps),
// which BatchNormBackward takes. Training with N*S = 1 element per
// channel (S the product of the axes after C) panics, as the unbiased
// variance needs two. Shapes and dtypes that do not fit panic with typed
// errors naming the op; a running statistic that carries an error makes y
// carry it, and nothing is recorded.
func BatchNorm(x, gamma, beta *Tensor, o BatchNormOpts) (y, stats *Tensor) {
	const op = "BatchNorm"
	ts := []*Tensor{x, gamma, beta}
	if o.Running != nil {
		ts = append(ts, o.Running.Mean, o.Running.Var, o.Running.Count)
	}
	sameDevice(op, ts...)
	n, c, s := bnDims(op, x)
	if gamma.n != c || beta.n != c {
		shapePanic(op, x.shape, gamma.shape, "gamma and beta must have the %d channels of axis 1 (beta %v)", c, beta.shape)
	}
	checkFloat32(op, x, gamma, beta)
	mode := uint32(0)
	rm, rv, cnt := x, x, x // bound, never written, without running statistics
	if o.Running != nil {
		r := o.Running
		if r.Mean.n != c || r.Var.n != c || r.Count.n != 1 {
			shapePanic(op, r.Mean.shape, r.Var.shape, "running mean and variance must have %d channels, the count 1 element (count %v)", c, r.Count.shape)
		}
		checkFloat32(op, r.Mean, r.Var)
		if r.Count.dtype != Int32 {
			panic(&DTypeError{Op: op, Got: r.Count.dtype, Want: "an int32 batch count"})
		}
		checkDistinct(op, []*Tensor{r.Mean, r.Var, r.Count}, []*Tensor{x, gamma, beta})
		rm, rv, cnt = r.Mean, r.Var, r.Count
		mode = 1
	}
	if !o.Training {
		if o.Running == nil {
			usagePanic(op, "evaluation needs the running statistics")
		}
		mode = 2
	} else if n*s < 2 {
		shapePanic(op, x.shape, []int{c}, "training needs more than one value per channel")
	}
	y = newOut(x.dev, Float32, x.shape, ts...)
	stats = newOut(x.dev, Float32, []int{c, 2}, ts...)
	local := bnLocal(x.dev, n*s)
	if !checkLoops(y, op, 3*((n*s+int(local)-1)/int(local)), "a channel's elements") {
		stats.fail(y.err)
		return y, stats
	}
	recordInto(op, func() error {
		return kernels.BatchNorm(x.dev, rowGrid(c), kernels.BatchNormSpec{LocalSizeX: local},
			kernels.BatchNormPush{N: uint32(n), C: uint32(c), S: uint32(s), Eps: o.Eps, Momentum: o.Momentum, Mode: mode},
			kernels.BatchNormBind{X: x.buf, G: gamma.buf, B: beta.buf, Y: y.buf, Stats: stats.buf, Rm: rm.buf, Rv: rv.buf, Count: cnt.buf})
	}, y, stats)
	return y, stats
}

// BatchNormBackward returns the gradients of BatchNorm's x, gamma and beta
// from dy, the gradient of its output, x, gamma and the stats it returned:
// dx of x's shape and dgamma, dbeta [C], all Float32. training says whether
// the forward pass used the batch's statistics (whose dependence on x is
// part of dx) or fixed running ones.
func BatchNormBackward(dy, x, gamma, stats *Tensor, training bool) (dx, dgamma, dbeta *Tensor) {
	const op = "BatchNormBackward"
	sameDevice(op, dy, x, gamma, stats)
	n, c, s := bnDims(op, x)
	if !slices.Equal(dy.shape, x.shape) {
		shapePanic(op, dy.shape, x.shape, "dy must have x's shape")
	}
	if gamma.n != c || stats.n != 2*c {
		shapePanic(op, gamma.shape, stats.shape, "want gamma [%d] and stats [%d 2]", c, c)
	}
	checkFloat32(op, dy, x, gamma, stats)
	dx = newOut(x.dev, Float32, x.shape, dy, x, gamma, stats)
	dgamma = newOut(x.dev, Float32, []int{c}, dy, x, gamma, stats)
	dbeta = newOut(x.dev, Float32, []int{c}, dy, x, gamma, stats)
	local := bnLocal(x.dev, n*s)
	if !checkLoops(dx, op, 2*((n*s+int(local)-1)/int(local)), "a channel's elements") {
		dgamma.fail(dx.err)
		dbeta.fail(dx.err)
		return dx, dgamma, dbeta
	}
	recordInto(op, func() error {
		return kernels.BatchNormBackward(x.dev, rowGrid(c), kernels.BatchNormBackwardSpec{LocalSizeX: local},
			kernels.BatchNormBackwardPush{N: uint32(n), C: uint32(c), S: uint32(s), Train: boolWord(training)},
			kernels.BatchNormBackwardBind{Dy: dy.buf, X: x.buf, G: gamma.buf, Stats: stats.buf, Dx: dx.buf, Dg: dgamma.buf, Db: dbeta.buf})
	}, dx, dgamma, dbeta)
	return dx, dgamma, dbeta
}

// bnDims returns x [N, C, ...] as N, C and the product S of the later
// axes, or panics for a tensor of fewer than two axes.
func bnDims(op string, x *Tensor) (n, c, s int) {
	if len(x.shape) < 2 {
		shapePanic(op, x.shape, nil, "want x [N, C, ...]")
	}
	n, c = x.shape[0], x.shape[1]
	return n, c, x.n / (n * c)
}

// bnLocal is the workgroup of the batch-norm kernels, whose tree spans it:
// rowLocal's, or in deterministic mode the same on every device.
func bnLocal(d *vk.Device, m int) uint32 {
	if d.Deterministic() {
		return detSegment(m)
	}
	return rowLocal(d, m)
}
