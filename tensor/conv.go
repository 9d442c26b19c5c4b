package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// 2-D convolution as im2col and MatMul: the patches each output pixel reads
// are laid out as the columns of a matrix [Cin/groups*kH*kW, N*Ho*Wo] per
// group (conv_im2col), the weights [Cout/groups, Cin/groups*kH*kW] times it
// with MatMul (which picks the kernel and tile for the device) give the
// output channel-major, [Cout, N*Ho*Wo], which conv_permute turns into NCHW
// with the bias added. The input gradient multiplies the weights,
// transposed, by the upstream gradient in that channel-major layout and
// gathers the columns back to pixels (conv_col2im: each input pixel sums, in
// a fixed order, the columns that read it; no atomics). The weight gradient
// is the channel-major upstream gradient times the patches, transposed.
// The patches are K-major because lavapipe's texel matmul runs about twice
// as fast on [Cout, K] by [K, N*Ho*Wo] as on [N*Ho*Wo, K] by [Cout, K]^T
// (measured on the MNIST example's conv2). Work is split over the batch
// where a matrix would pass the device's maxStorageBufferRange. Where the
// forward GEMM would run on matmul_tex (lavapipe), it runs as an implicit
// GEMM instead, reading the patches from the image (conv_implicit.go), and
// stores NCHW with the bias itself where its tiles allow; the backward
// passes follow it there (conv_grad_implicit.go).

// Conv2dOpts configures a 2-D convolution as PyTorch's nn.Conv2d does. Zero
// values take PyTorch's defaults: stride 1, padding 0, dilation 1, groups
// 1. Index 0 is the height, 1 the width.
type Conv2dOpts struct {
	Stride, Padding, Dilation [2]int
	Groups                    int
}

// convGeom is a checked convolution's sizes.
type convGeom struct {
	n, cin, h, w, cout, kh, kw, ho, wo int
	sh, sw, ph, pw, dh, dw             int
	groups, cg, og, kg                 int // groups; in and out channels per group; GEMM depth Cin/groups*kH*kW
}

// convCheck panics with a *ShapeError or *UsageError unless x [N, Cin, H,
// W] and w [Cout, Cin/groups, kH, kW] make a convolution under o, and
// returns its sizes.
func convCheck(op string, xs, ws []int, o Conv2dOpts) convGeom {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	g := convGeom{
		sh: def(o.Stride[0], 1), sw: def(o.Stride[1], 1), ph: o.Padding[0], pw: o.Padding[1],
		dh: def(o.Dilation[0], 1), dw: def(o.Dilation[1], 1), groups: def(o.Groups, 1),
	}
	if g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.groups < 1 {
		usagePanic(op, "stride %v, padding %v, dilation %v and groups %d: want stride, dilation and groups >= 1 (0 for the default), padding >= 0",
			o.Stride, o.Padding, o.Dilation, o.Groups)
	}
	if len(xs) != 4 || len(ws) != 4 {
		shapePanic(op, xs, ws, "want input [N, Cin, H, W] and weight [Cout, Cin/groups, kH, kW]")
	}
	g.n, g.cin, g.h, g.w = xs[0], xs[1], xs[2], xs[3]
	g.cout, g.kh, g.kw = ws[0], ws[2], ws[3]
	if g.cin%g.groups != 0 || g.cout%g.groups != 0 {
		shapePanic(op, xs, ws, "%d input and %d output channels are not both divisible by groups = %d", g.cin, g.cout, g.groups)
	}
	g.cg, g.og = g.cin/g.groups, g.cout/g.groups
	if ws[1] != g.cg {
		shapePanic(op, xs, ws, "weight has %d input channels per group, input %d channels in %d groups needs %d", ws[1], g.cin, g.groups, g.cg)
	}
	g.kg = g.cg * g.kh * g.kw
	g.ho = (g.h+2*g.ph-g.dh*(g.kh-1)-1)/g.sh + 1
	g.wo = (g.w+2*g.pw-g.dw*(g.kw-1)-1)/g.sw + 1
	if g.h+2*g.ph < g.dh*(g.kh-1)+1 || g.w+2*g.pw < g.dw*(g.kw-1)+1 {
		shapePanic(op, xs, ws, "kernel %dx%d with dilation %dx%d is larger than the padded input %dx%d",
			g.kh, g.kw, g.dh, g.dw, g.h+2*g.ph, g.w+2*g.pw)
	}
	for _, v := range []int{g.n * g.cout * g.ho * g.wo, g.n * g.ho * g.wo * g.groups * g.kg} {
		if v > 1<<31-1 {
			usagePanic(op, "input %v and weight %v need more than 2^31 elements", xs, ws)
		}
	}
	return g
}

func (g convGeom) yShape() []int { return []int{g.n, g.cout, g.ho, g.wo} }

// gemmDType is the dtype a convolution hands MatMul for operands of dtype
// dt: fp16 stays fp16, bf16 widens to fp32 (exactly). MatMul reads bf16,
// but conv_tex, which the forward takes for operands of one dtype, does
// not: widened weights keep bf16 away from it.
func gemmDType(dt DType) DType {
	if dt == Float16 {
		return Float16
	}
	return Float32
}

// view returns t with another shape over the same memory. The view must
// never be released: t owns the memory.
func (t *Tensor) view(shape ...int) *Tensor {
	return &Tensor{dev: t.dev, buf: t.buf, dtype: t.dtype, shape: shape, n: t.n, err: t.err}
}

// gemmShape is [groups, rows, cols], or [rows, cols] for one group (B may
// then be 2-D and MatMul picks its kernel from the plain case).
func (g convGeom) gemmShape(rows, cols int) []int {
	if g.groups == 1 {
		return []int{rows, cols}
	}
	return []int{g.groups, rows, cols}
}

// convPassSamples, when positive, caps the samples of a pass, so tests can
// split small problems into passes.
var convPassSamples int

// chunk returns the samples per pass: as many as keep every per-pass
// tensor, of perSample bytes a sample, within the device's
// maxStorageBufferRange, even when one sample's span of an output of
// 16-bit dtype dt has an odd length (a word would have two writers).
func (g convGeom) chunk(d *vk.Device, perSample int64, span int, dt DType) (int, error) {
	limit := int64(d.Info().MaxStorageBufferRange) - d.Alignment()
	if d.Deterministic() {
		// The weight gradient sums its passes in order: the same passes on
		// every device, within the least range (and most alignment) Vulkan
		// allows.
		limit = min(limit, 1<<27-256)
	}
	if perSample > limit {
		return 0, fmt.Errorf("one sample's patch matrix is %d bytes, over the device's maxStorageBufferRange of %d bytes: %w",
			perSample, limit, vk.ErrInvalidArgument)
	}
	nc := int(min(int64(g.n), limit/perSample))
	if convPassSamples > 0 {
		nc = min(nc, max(convPassSamples, 2))
	}
	if nc < g.n && !dt.wide() && span%2 == 1 {
		if nc < 2 {
			return 0, fmt.Errorf("one sample's patch matrix is %d bytes, and two are needed per pass, over the device's maxStorageBufferRange of %d bytes: %w",
				perSample, limit, vk.ErrInvalidArgument)
		}
		nc &^= 1
	}
	return nc, nil
}

// Conv2d returns the 2-D convolution (cross-correlation, as PyTorch's) of x
// [N, Cin, H, W] with weights w [Cout, Cin/groups, kH, kW], plus the bias b
// [Cout] unless b is nil: y [N, Cout, Ho, Wo] in x's dtype, with
// Ho = (H + 2*padH - dilH*(kH-1) - 1)/strideH + 1 (Wo alike). x and w must
// have one dtype (float32, float16 or bfloat16), b any floating one.
// Products are accumulated in fp32 (fp16 operands stay fp16 in the matrix
// product, bf16 ones are widened to fp32), the bias is added in fp32 and the
// sum is rounded once to the output dtype.
//
// Shapes that do not make a convolution (channels that do not match,
// channels not divisible by groups, a kernel larger than the padded input)
// panic with a *ShapeError naming both shapes; a negative stride, padding
// or dilation with a *UsageError; a dtype with a *DTypeError. A device
// error, or a single sample whose patch matrix exceeds maxStorageBufferRange,
// is carried by the result.
func Conv2d(x, w, b *Tensor, o Conv2dOpts) *Tensor {
	const op = "Conv2d"
	ins := []*Tensor{x, w}
	if b != nil {
		ins = append(ins, b)
	}
	sameDevice(op, ins...)
	g := convCheck(op, x.shape, w.shape, o)
	convDTypes(op, x, w, b)
	if b != nil && !slices.Equal(b.shape, []int{g.cout}) {
		shapePanic(op, b.shape, []int{g.cout}, "bias must be [Cout]")
	}
	out := newOut(x.dev, x.dtype, g.yShape(), ins...)
	if out.err != nil {
		return out
	}
	gd := gemmDType(x.dtype)
	wm := castTemp(w, gd)
	defer releaseTemp(wm, w)
	hw := g.ho * g.wo
	nc, err := g.chunk(x.dev, int64(hw)*int64(max(g.groups*g.kg*g.colsSize(gd), g.cout*4)), g.cout*hw, out.dtype)
	if err != nil {
		out.fail(fmt.Errorf("tensor: %s: %w", op, err))
		return out
	}
	wv := wm.view(g.gemmShape(g.og, g.kg)...)
	for n0 := 0; n0 < g.n && out.err == nil; n0 += nc {
		m := min(nc, g.n-n0)
		var y *Tensor
		pl, mg, ok := g.implicitPlan(x, wm, m)
		if ok && g.nchwOut(pl) {
			if err := wm.err; err != nil {
				out.fail(err)
			} else {
				g.implicitInto(op, out, x, wm, b, pl, mg, n0)
			}
			continue
		}
		if ok {
			y = g.implicitGemm(op, x, wm, pl, mg, n0, false)
		} else {
			cols := g.im2col(op, x, gd, n0, m)
			y = MatMul(wv, cols, MatMulOpts{Out: Float32})
			cols.Release()
		}
		if err := firstErr(wm, y); err != nil {
			out.fail(err)
		} else {
			g.permuteOut(op, out, y, b, n0, m)
		}
		y.Release()
	}
	return out
}

// convDTypes panics with a *DTypeError unless x and w share a floating
// dtype and b (when not nil) is floating.
func convDTypes(op string, x, w, b *Tensor) {
	checkFloating(op, x.dtype, x, w)
	if w.dtype != x.dtype {
		panic(&DTypeError{Op: op, Got: w.dtype, Want: fmt.Sprintf("the input's dtype %s for the weight", x.dtype)})
	}
	if b != nil {
		checkFloating(op, b.dtype, b)
	}
}

// castTemp returns t in dtype dt: t itself, or a cast the caller releases
// with releaseTemp.
func castTemp(t *Tensor, dt DType) *Tensor {
	if t.dtype == dt {
		return t
	}
	return Cast(t, dt)
}

func releaseTemp(tmp, orig *Tensor) {
	if tmp != orig {
		tmp.Release()
	}
}

// convPush is the push constants of im2col for samples n0 .. n0+m.
func (g convGeom) convPush(n0, m int) kernels.ConvPush {
	return kernels.ConvPush{N0: u32(n0), Cin: u32(g.cin), H: u32(g.h), W: u32(g.w), Ho: u32(g.ho), Wo: u32(g.wo),
		Kh: u32(g.kh), Kw: u32(g.kw), Sh: int32(g.sh), Sw: int32(g.sw), Ph: int32(g.ph), Pw: int32(g.pw),
		Dh: int32(g.dh), Dw: int32(g.dw), Cg: u32(g.cg), Rows: u32(m * g.ho * g.wo)}
}

// colsSize is the bytes of a patch matrix element of dtype dt: 4 where
// im2col may fall back to fp32 (odd rows).
func (g convGeom) colsSize(dt DType) int {
	if g.ho*g.wo%2 == 1 {
		return 4
	}
	return dt.Size()
}

// im2col returns the patch matrix [groups, Kg, m*Ho*Wo] of samples n0 ..
// n0+m of x, in dtype dt; in fp32 when dt is 16-bit and the rows have an
// odd length (a word would straddle two rows, which two invocations write).
func (g convGeom) im2col(op string, x *Tensor, dt DType, n0, m int) *Tensor {
	rows := m * g.ho * g.wo
	if !dt.wide() && rows%2 == 1 {
		dt = Float32
	}
	cols := New(x.dev, dt, g.gemmShape(g.kg, rows)...)
	if cols.err != nil {
		return cols
	}
	grid := groups1D(cols, ceilDiv(rows, convRun))
	if !checkLoops(cols, op, perInvocationOf(cols.dev, grid, ceilDiv(rows, convRun))*(convRun+1), "im2col") {
		return cols
	}
	p := g.convPush(n0, m)
	maxY := int(x.dev.Info().MaxWorkgroupCount[1])
	for k0 := 0; k0 < g.groups*g.kg && cols.err == nil; k0 += maxY {
		p.K0 = u32(k0)
		grid[1] = u32(min(maxY, g.groups*g.kg-k0))
		launched(cols, kernels.ConvIm2col(x.dev, grid, kernels.ConvIm2colSpec{In0DT: x.dtype.code(), OutDT: dt.code()},
			p, kernels.ConvIm2colBind{X: x.buf, D: cols.buf}))
	}
	return cols
}

// convMaxDepth bounds the rows of a weight-gradient pass on drivers with a
// loop limit: the matmul kernels loop about depth/4 times per invocation.
const convMaxDepth = 1 << 17

// convRun is RUN of shaders/include/conv.glsl: the consecutive elements
// one invocation of the convolution kernels makes.
const convRun = 8

// perInvocationOf is how many items a grid-stride kernel over n items runs
// in each invocation of grid.
func perInvocationOf(d *vk.Device, grid [3]uint32, n int) int {
	return ceilDiv(n, int(grid[0])*int(kernels.LocalSize(d)))
}

// permuteOut writes the GEMM result y [groups, Cout/groups, m*Ho*Wo] of
// samples n0 .. n0+m into out (NCHW), adding b unless it is nil.
func (g convGeom) permuteOut(op string, out, y, b *Tensor, n0, m int) {
	hw := g.ho * g.wo
	n := m * g.cout * hw
	spec := kernels.ConvPermuteSpec{In0DT: y.dtype.code(), OutDT: out.dtype.code()}
	bias := y.buf
	if b != nil {
		spec.HasBias, spec.In1DT, bias = true, b.dtype.code(), b.buf
	}
	grid := groups1D(out, ceilDiv(n, convRun))
	if checkLoops(out, op, perInvocationOf(out.dev, grid, ceilDiv(n, convRun))*(convRun+1), "permute") {
		launched(out, kernels.ConvPermute(out.dev, grid, spec,
			kernels.PermutePush{N: u32(n), Base: u32(n0 * g.cout * hw), Hw: u32(hw), C: u32(g.cout), Rows: u32(m * hw)},
			kernels.ConvPermuteBind{S: y.buf, Bias: bias, D: out.buf}))
	}
}

// permuteIn returns dy's samples n0 .. n0+m in the GEMM layout [groups,
// Cout/groups, m*Ho*Wo], in dtype dt.
func (g convGeom) permuteIn(op string, dy *Tensor, dt DType, n0, m int) *Tensor {
	hw := g.ho * g.wo
	t := New(dy.dev, dt, g.gemmShape(g.og, m*hw)...)
	if t.err != nil {
		return t
	}
	grid := groups1D(t, ceilDiv(t.n, convRun))
	if checkLoops(t, op, perInvocationOf(t.dev, grid, ceilDiv(t.n, convRun))*(convRun+1), "permute") {
		launched(t, kernels.ConvPermute(t.dev, grid,
			kernels.ConvPermuteSpec{In0DT: dy.dtype.code(), OutDT: dt.code(), FromNchw: true},
			kernels.PermutePush{N: u32(t.n), Base: u32(n0 * g.cout * hw), Hw: u32(hw), C: u32(g.cout), Rows: u32(m * hw)},
			kernels.ConvPermuteBind{S: dy.buf, Bias: dy.buf, D: t.buf}))
	}
	return t
}

// checkGrad panics unless dy has the shape of the convolution's output.
func (g convGeom) checkGrad(op string, dy *Tensor) {
	if !slices.Equal(dy.shape, g.yShape()) {
		shapePanic(op, dy.shape, g.yShape(), "the upstream gradient must have the output's shape")
	}
	checkFloating(op, dy.dtype, dy)
}

// Conv2dBackwardInput returns the gradient of Conv2d with respect to its
// input, of shape xShape, in dy's dtype: dy [N, Cout, Ho, Wo] times the
// weights w, gathered back to the pixels each column read (in a fixed
// order, so the same bits every run). w must have dy's dtype. It panics as
// Conv2d does; dy of another shape than the output's panics with a
// *ShapeError.
func Conv2dBackwardInput(dy, w *Tensor, xShape []int, o Conv2dOpts) *Tensor {
	const op = "Conv2dBackwardInput"
	sameDevice(op, dy, w)
	g := convCheck(op, xShape, w.shape, o)
	g.checkGrad(op, dy)
	convDTypes(op, dy, w, nil)
	checkShape(op, xShape)
	if firstErr(dy, w) == nil {
		if dx, ok := g.implicitInput(dy, w); ok {
			return dx
		}
	}
	dx := newOut(dy.dev, dy.dtype, xShape, dy, w)
	if dx.err != nil {
		return dx
	}
	gd := gemmDType(dy.dtype)
	wm := castTemp(w, gd)
	defer releaseTemp(wm, w)
	hw := g.ho * g.wo
	nc, err := g.chunk(dy.dev, int64(hw)*int64(max(g.groups*g.kg*4, g.cout*gd.Size())), g.cin*g.h*g.w, dx.dtype)
	if err != nil {
		dx.fail(fmt.Errorf("tensor: %s: %w", op, err))
		return dx
	}
	wv := wm.view(g.gemmShape(g.og, g.kg)...)
	kk := g.kh * g.kw
	for n0 := 0; n0 < g.n && dx.err == nil; n0 += nc {
		m := min(nc, g.n-n0)
		dyg := g.permuteIn(op, dy, gd, n0, m)
		dcols := MatMul(wv, dyg, MatMulOpts{TransA: true, Out: Float32})
		dyg.Release()
		if err := firstErr(wm, dcols); err != nil {
			dx.fail(err)
		} else {
			n := m * g.cin * g.h * g.w
			grid := groups1D(dx, ceilDiv(n, convRun))
			if checkLoops(dx, op, perInvocationOf(dx.dev, grid, ceilDiv(n, convRun))*convRun*(kk+g.kh+1), "col2im") {
				p := kernels.Col2imPush{N: u32(n), Base: u32(n0 * g.cin * g.h * g.w)}
				c := g.convPush(0, m)
				p.Cin, p.H, p.W, p.Ho, p.Wo, p.Kh, p.Kw = c.Cin, c.H, c.W, c.Ho, c.Wo, c.Kh, c.Kw
				p.Sh, p.Sw, p.Ph, p.Pw, p.Dh, p.Dw, p.Cg, p.Rows = c.Sh, c.Sw, c.Ph, c.Pw, c.Dh, c.Dw, c.Cg, c.Rows
				launched(dx, kernels.ConvCol2im(dx.dev, grid, kernels.ConvCol2imSpec{In0DT: Float32.code(), OutDT: dx.dtype.code(), UnitStride: g.sh == 1 && g.sw == 1},
					p, kernels.ConvCol2imBind{S: dcols.buf, D: dx.buf}))
			}
		}
		dcols.Release()
	}
	return dx
}

// Conv2dBackwardWeight returns the gradients of Conv2d with respect to its
// weights, dw of shape wShape, and to its bias, db [Cout], both in x's
// dtype (as nn's linear rule gives each gradient its input's dtype; the
// gradient of a weight cast down by autocast is cast back to the fp32
// master), from the upstream gradient dy [N, Cout, Ho, Wo] and the input x.
// dw sums over the batch in fp32 and is rounded once; db is the sum of dy
// over N, Ho and Wo, in fp32, rounded once. db is computed whether or not
// the convolution had a bias: release it when unused. It panics as Conv2d
// does.
func Conv2dBackwardWeight(dy, x *Tensor, wShape []int, o Conv2dOpts) (dw, db *Tensor) {
	const op = "Conv2dBackwardWeight"
	sameDevice(op, dy, x)
	g := convCheck(op, x.shape, wShape, o)
	g.checkGrad(op, dy)
	checkFloating(op, x.dtype, x)
	checkShape(op, wShape)
	hw := g.ho * g.wo
	acc, err := g.weightGemm(op, dy, x, wShape)
	if err != nil {
		acc.Release()
		dw = &Tensor{dev: x.dev, dtype: x.dtype, shape: slices.Clone(wShape), n: checkShape(op, wShape), err: err}
	} else {
		acc.shape, acc.n = slices.Clone(wShape), checkShape(op, wShape)
		dw = acc
		if x.dtype != Float32 {
			dw = Cast(acc, x.dtype)
			acc.Release()
		}
	}
	sums := SumAxis(dy.view(g.n, g.cout, hw), 2)
	db32 := SumAxis(sums, 0)
	sums.Release()
	db = db32
	if x.dtype != Float32 {
		db = Cast(db32, x.dtype)
		db32.Release()
	}
	return dw, db
}

// weightGemm returns the weight gradient in fp32: on conv_tex where
// implicitWeight applies, else as the channel-major dy times the patches,
// transposed, summed over passes of samples.
func (g convGeom) weightGemm(op string, dy, x *Tensor, wShape []int) (*Tensor, error) {
	gx, gy := gemmDType(x.dtype), gemmDType(dy.dtype)
	hw := g.ho * g.wo
	nc, err := g.chunk(x.dev, int64(hw)*int64(max(g.groups*g.kg*g.colsSize(gx), g.cout*gy.Size())), 0, Float32)
	if err != nil {
		return nil, fmt.Errorf("tensor: %s: %w", op, err)
	}
	if err := firstErr(dy, x); err != nil {
		return nil, err
	}
	if acc, ok := g.implicitWeight(op, dy, x, wShape); ok {
		return acc, acc.err
	}
	if loopLimit(x.dev) != 0 || x.dev.Deterministic() {
		// The product's depth is the pass's rows: keep it where the matmul
		// kernels' loops stay under the driver's limit (see ErrLoopLimit);
		// in deterministic mode on every device, for the same passes.
		nc = min(nc, max(1, convMaxDepth/hw))
	}
	var acc *Tensor
	for n0 := 0; n0 < g.n && err == nil; n0 += nc {
		m := min(nc, g.n-n0)
		cols := g.im2col(op, x, gx, n0, m)
		dyg := g.permuteIn(op, dy, gy, n0, m)
		o := MatMulOpts{TransB: true, Out: Float32}
		if acc != nil {
			o.Beta, o.C = 1, acc
		}
		next := MatMul(dyg, cols, o)
		cols.Release()
		dyg.Release()
		acc.Release()
		acc = next
		err = acc.err
	}
	return acc, err
}
