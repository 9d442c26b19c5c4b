package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// 2-D pooling over the last two axes of x [..., H, W] (NCHW, or [C, H, W]),
// with PyTorch's windows and defaults (no ceil mode; average pooling counts
// the padding, count_include_pad). Every op computes in fp32 and rounds once
// to its output's dtype; the backward passes are gathers (each input pixel
// sums the gradients of the windows that hold it, in a fixed order, without
// atomics), so they give the same bits every run.

// Pooling modes, as shaders/include/pool.glsl numbers them.
const (
	poolMax      = 0
	poolAvg      = 1
	poolAdaptive = 2
)

// poolGeom is a checked pooling's sizes.
type poolGeom struct {
	planes, h, w, ho, wo   int
	kh, kw, sh, sw, ph, pw int
}

// poolCheck panics unless x's shape, kernel, stride and padding make a
// pooling as PyTorch's max_pool2d and avg_pool2d allow: kernel >= 1, stride
// >= 1 (0 means the kernel), 0 <= padding <= kernel/2, an output of at
// least one pixel.
func poolCheck(op string, xs []int, kernel, stride, padding [2]int) poolGeom {
	if len(xs) < 3 {
		shapePanic(op, xs, nil, "want an input [N, C, H, W] or [C, H, W]")
	}
	for i := range 2 {
		if stride[i] == 0 {
			stride[i] = kernel[i]
		}
		if kernel[i] < 1 || stride[i] < 1 || padding[i] < 0 || padding[i] > kernel[i]/2 {
			usagePanic(op, "kernel %v, stride %v, padding %v: want kernel >= 1, stride >= 1 (0 for the kernel), 0 <= padding <= kernel/2",
				kernel, stride, padding)
		}
	}
	r := len(xs)
	g := poolGeom{planes: checkShape(op, xs[:r-2]), h: xs[r-2], w: xs[r-1],
		kh: kernel[0], kw: kernel[1], sh: stride[0], sw: stride[1], ph: padding[0], pw: padding[1]}
	if g.h+2*g.ph < g.kh || g.w+2*g.pw < g.kw {
		shapePanic(op, xs, kernel[:], "kernel %v is larger than the padded input %dx%d", kernel, g.h+2*g.ph, g.w+2*g.pw)
	}
	g.ho, g.wo = (g.h+2*g.ph-g.kh)/g.sh+1, (g.w+2*g.pw-g.kw)/g.sw+1
	return g
}

// adaptiveCheck is poolCheck for adaptive pooling to outH x outW.
func adaptiveCheck(op string, xs []int, outH, outW int) poolGeom {
	if len(xs) < 3 {
		shapePanic(op, xs, nil, "want an input [N, C, H, W] or [C, H, W]")
	}
	if outH < 1 || outW < 1 {
		usagePanic(op, "output size %dx%d: want at least 1x1", outH, outW)
	}
	r := len(xs)
	return poolGeom{planes: checkShape(op, xs[:r-2]), h: xs[r-2], w: xs[r-1], ho: outH, wo: outW}
}

func (g poolGeom) yShape(xs []int) []int {
	return append(slices.Clone(xs[:len(xs)-2]), g.ho, g.wo)
}

// push is the kernels' push constants for n elements written: the output
// [planes, Ho, Wo] forward, the input's gradient [planes, H, W] backward.
// Their indices are below 2^31, as div_by needs: a buffer holds under 2^32
// bytes, and every dtype takes at least two.
func (g poolGeom) push(n int, backward bool) kernels.PoolPush {
	p := kernels.PoolPush{N: u32(n), H: u32(g.h), W: u32(g.w), Ho: u32(g.ho), Wo: u32(g.wo),
		Kh: int32(g.kh), Kw: int32(g.kw), Sh: int32(g.sh), Sw: int32(g.sw), Ph: int32(g.ph), Pw: int32(g.pw)}
	if backward {
		p.DwM, p.DwS = divMagic(p.W)
		p.DhM, p.DhS = divMagic(p.H)
		if g.sh > 0 { // adaptive pooling has no stride
			p.ShM, p.ShS = divMagic(u32(g.sh))
			p.SwM, p.SwS = divMagic(u32(g.sw))
		}
	} else {
		p.DwM, p.DwS = divMagic(p.Wo)
		p.DhM, p.DhS = divMagic(p.Ho)
	}
	return p
}

// tiles2x2 reports whether max or average pooling's windows tile the
// input two by two (kernel 2, stride 2, no padding: MaxPool2d(2)) with
// planes of even height and rows of whole blocks of 8: the case of the
// texel forms pool2x2_tex and pool2x2_backward_tex, which read a block of 8
// where the general kernels make a scattered load per pixel. lavapipe, the
// MNIST example's 24x24 at batch 64 in fp16 (`go test -run XXX -bench
// MaxPool2d ./tensor`, two alternated runs): forward 11.5-12.4 -> 2.1 ms,
// backward 19.5-20.6 -> 2.2 ms.
func (g poolGeom) tiles2x2(mode uint32) bool {
	return mode != poolAdaptive && !pool2x2Off && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 &&
		g.ph == 0 && g.pw == 0 && g.h%2 == 0 && g.w%8 == 0
}

// pool2x2Off turns tiles2x2's kernels off, for tests that compare them
// with the general ones.
var pool2x2Off bool

// loops are the iterations of one output's window (forward) or of one input
// pixel's windows (backward), for the loop limit.
func (g poolGeom) loops(mode uint32, backward bool) int {
	switch {
	case mode == poolAdaptive && backward:
		return (ceilDiv(g.ho, g.h) + 1) * (ceilDiv(g.wo, g.w) + 1)
	case mode == poolAdaptive:
		return (ceilDiv(g.h, g.ho) + 1) * (ceilDiv(g.w, g.wo) + 1)
	case backward:
		return ceilDiv(g.kh, g.sh) * ceilDiv(g.kw, g.sw)
	}
	return g.kh * g.kw
}

// grid is the general kernels' grid over out's pairs of elements, each
// looping per times: on a CPU driver as few workgroups as texLoopGrid
// makes, for CPU drivers spend microseconds on each. LeNet's 28x28 at
// batch 64 in fp16 (`go test -run XXX -bench MaxPool2d ./tensor`): on
// lavapipe forward 7.6 -> 5.7 ms, backward 13.5 -> 7.3-7.6 ms; on
// SwiftShader 52 -> 37 ms and 183 -> 95 ms.
func (g poolGeom) grid(out *Tensor, per int) [3]uint32 {
	if formsOf(out.dev).fewGroups {
		return texLoopGrid(out.dev, (out.n+1)/2, per, int(kernels.LocalSize(out.dev)))
	}
	return pairGroups(out.dev, out.n)
}

// pool records the forward kernel of mode into y (and idx for max).
func (g poolGeom) pool(op string, mode uint32, x, y, idx *Tensor) {
	if y.err != nil {
		return
	}
	ib := y.buf
	if idx != nil {
		ib = idx.buf
	}
	if g.tiles2x2(mode) && texelsOn(y, x, idx) {
		grid := texLoopGrid(y.dev, y.n/4, 5, int(kernels.LocalSize(y.dev))) // four outputs an item, a loop over a window's four pixels
		launched(y, kernels.Pool2x2Tex(y.dev, grid, kernels.Pool2x2TexSpec{In0DT: x.dtype.code(), OutDT: y.dtype.code(), Mode: mode},
			g.push(y.n, false), kernels.Pool2x2TexBind{X: x.buf, D: y.buf, Idx: ib}))
		return
	}
	per := 2 * (g.loops(mode, false) + g.kh + 1)
	grid := g.grid(y, per)
	if !checkLoops(y, op, perInvocationOf(y.dev, grid, (y.n+1)/2)*per, "a pooling window") {
		return
	}
	launched(y, kernels.Pool2d(y.dev, grid, kernels.Pool2dSpec{In0DT: x.dtype.code(), OutDT: y.dtype.code(), Mode: mode},
		g.push(y.n, false), kernels.Pool2dBind{X: x.buf, D: y.buf, Idx: ib}))
}

// poolBack records the backward kernel of mode into dx.
func (g poolGeom) poolBack(op string, mode uint32, dy, idx, dx *Tensor) {
	if dx.err != nil {
		return
	}
	ib := dy.buf
	if idx != nil {
		ib = idx.buf
	}
	if g.tiles2x2(mode) && texelsOn(dx, dy, idx) {
		grid := texLoopGrid(dx.dev, dy.n/4, 1, int(kernels.LocalSize(dx.dev))) // four windows an item, no inner loop
		spec := kernels.Pool2x2BackwardTexSpec{In0DT: dy.dtype.code(), OutDT: dx.dtype.code(), Mode: mode}
		launched(dx, kernels.Pool2x2BackwardTex(dx.dev, grid, spec, g.push(dy.n, false), kernels.Pool2x2BackwardTexBind{Dy: dy.buf, Idx: ib, D: dx.buf}))
		return
	}
	per := 2 * (g.loops(mode, true) + g.kh + 1)
	grid := g.grid(dx, per)
	if !checkLoops(dx, op, perInvocationOf(dx.dev, grid, (dx.n+1)/2)*per, "a pixel's pooling windows") {
		return
	}
	p := g.push(dx.n, true)
	spec := kernels.Pool2dBackwardSpec{In0DT: dy.dtype.code(), OutDT: dx.dtype.code(), Mode: mode,
		Disjoint: mode != poolAdaptive && g.sh >= g.kh && g.sw >= g.kw}
	bind := kernels.Pool2dBackwardBind{Dy: dy.buf, Idx: ib, D: dx.buf}
	if texelsOn(dx, dy, idx) {
		// The general backward's texel form: on lavapipe it took the CNN's
		// pooling (before pool2x2_backward_tex, tools/train -model cnn
		// -train-samples 640 -profile) from 22-24 to 19-21 ms a launch.
		// The general forward gained nothing from reading x as texels.
		launched(dx, kernels.Pool2dBackwardForms.Texel(dx.dev, grid, spec, p, bind))
		return
	}
	launched(dx, kernels.Pool2dBackwardForms.Plain(dx.dev, grid, spec, p, bind))
}

// checkPoolGrad panics unless dy has the pooling's output shape.
func checkPoolGrad(op string, dy *Tensor, want []int) {
	if !slices.Equal(dy.shape, want) {
		shapePanic(op, dy.shape, want, "the upstream gradient must have the output's shape")
	}
	checkFloating(op, dy.dtype, dy)
}

// MaxPool2d returns the maximum over each kernel window of x [..., H, W]
// (PyTorch's max_pool2d; a zero stride means the kernel's size, padding is
// -inf), in x's dtype, and argmax: the Int32 index h*W + w, within its
// plane, of each window's first maximum in row-major order, which
// MaxPool2dBackward takes. A NaN in a window is its maximum. It panics with
// a *UsageError for a kernel, stride or padding PyTorch refuses (padding
// over half the kernel) and with a *ShapeError for a kernel larger than the
// padded input.
func MaxPool2d(x *Tensor, kernel, stride, padding [2]int) (y, argmax *Tensor) {
	const op = "MaxPool2d"
	sameDevice(op, x)
	checkFloating(op, x.dtype, x)
	g := poolCheck(op, x.shape, kernel, stride, padding)
	ys := g.yShape(x.shape)
	y = newOut(x.dev, x.dtype, ys, x)
	argmax = newOut(x.dev, Int32, ys, y)
	if argmax.err != nil && y.err == nil {
		y.fail(argmax.err)
	}
	g.pool(op, poolMax, x, y, argmax)
	if y.err != nil && argmax.err == nil {
		argmax.fail(y.err)
	}
	return y, argmax
}

// MaxPool2dBackward returns the gradient of MaxPool2d with respect to its
// input, of shape xShape, in dy's dtype: each window's upstream gradient
// goes to its argmax; where windows overlap, a pixel sums them in a fixed
// order. kernel, stride and padding are the forward's (the gather needs the
// windows). An argmax of another shape than dy's panics with a *ShapeError.
func MaxPool2dBackward(dy, argmax *Tensor, xShape []int, kernel, stride, padding [2]int) *Tensor {
	const op = "MaxPool2dBackward"
	sameDevice(op, dy, argmax)
	checkShape(op, xShape)
	g := poolCheck(op, xShape, kernel, stride, padding)
	checkPoolGrad(op, dy, g.yShape(xShape))
	if !slices.Equal(argmax.shape, dy.shape) {
		shapePanic(op, argmax.shape, dy.shape, "argmax must have the upstream gradient's shape")
	}
	if argmax.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: argmax.dtype, Want: "int32 argmax"})
	}
	dx := newOut(dy.dev, dy.dtype, xShape, dy, argmax)
	g.poolBack(op, poolMax, dy, argmax, dx)
	return dx
}

// AvgPool2d returns the mean over each kernel window of x [..., H, W]
// (PyTorch's avg_pool2d with count_include_pad: a window's sum over kH*kW,
// padding counting as zeros), in x's dtype. It panics as MaxPool2d does.
func AvgPool2d(x *Tensor, kernel, stride, padding [2]int) *Tensor {
	const op = "AvgPool2d"
	sameDevice(op, x)
	checkFloating(op, x.dtype, x)
	g := poolCheck(op, x.shape, kernel, stride, padding)
	y := newOut(x.dev, x.dtype, g.yShape(x.shape), x)
	g.pool(op, poolAvg, x, y, nil)
	return y
}

// AvgPool2dBackward returns the gradient of AvgPool2d with respect to its
// input, of shape xShape, in dy's dtype.
func AvgPool2dBackward(dy *Tensor, xShape []int, kernel, stride, padding [2]int) *Tensor {
	const op = "AvgPool2dBackward"
	sameDevice(op, dy)
	checkShape(op, xShape)
	g := poolCheck(op, xShape, kernel, stride, padding)
	checkPoolGrad(op, dy, g.yShape(xShape))
	dx := newOut(dy.dev, dy.dtype, xShape, dy)
	g.poolBack(op, poolAvg, dy, nil, dx)
	return dx
}

// AdaptiveAvgPool2d returns x [..., H, W] averaged to [..., outH, outW]
// over PyTorch's adaptive windows: output row i averages input rows
// floor(i*H/outH) to ceil((i+1)*H/outH) - 1 (columns alike), in x's dtype.
// An output size below 1 panics with a *UsageError.
func AdaptiveAvgPool2d(x *Tensor, outH, outW int) *Tensor {
	const op = "AdaptiveAvgPool2d"
	sameDevice(op, x)
	checkFloating(op, x.dtype, x)
	g := adaptiveCheck(op, x.shape, outH, outW)
	y := newOut(x.dev, x.dtype, g.yShape(x.shape), x)
	g.pool(op, poolAdaptive, x, y, nil)
	return y
}

// AdaptiveAvgPool2dBackward returns the gradient of AdaptiveAvgPool2d with
// respect to its input, of shape xShape, in dy's dtype.
func AdaptiveAvgPool2dBackward(dy *Tensor, xShape []int) *Tensor {
	const op = "AdaptiveAvgPool2dBackward"
	sameDevice(op, dy)
	checkShape(op, xShape)
	if len(dy.shape) < 3 {
		shapePanic(op, dy.shape, xShape, "want an upstream gradient [N, C, outH, outW] or [C, outH, outW]")
	}
	g := adaptiveCheck(op, xShape, dy.shape[len(dy.shape)-2], dy.shape[len(dy.shape)-1])
	checkPoolGrad(op, dy, g.yShape(xShape))
	dx := newOut(dy.dev, dy.dtype, xShape, dy)
	g.poolBack(op, poolAdaptive, dy, nil, dx)
	return dx
}
