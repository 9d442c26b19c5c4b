package tensor

// SetConvPassSamples caps the samples of a convolution's pass at n (at
// least 2), as a device with a small maxStorageBufferRange would split the
// work; 0 restores the device's limit.
func SetConvPassSamples(n int) { convPassSamples = n }

// SetConvImplicit sets how Conv2d chooses the implicit GEMM (conv_tex): 0
// by the rule, 1 wherever the device and layout allow, -1 never.
func SetConvImplicit(mode int) { convImplicitMode = mode }

// ConvImplicit reports whether Conv2d of x and w under o runs its GEMM as
// an implicit GEMM (in one pass).
func ConvImplicit(x, w *Tensor, o Conv2dOpts) bool {
	g := convCheck("Conv2d", x.shape, w.shape, o)
	_, _, ok := g.implicitPlan(x, w, g.n)
	return ok
}

// ConvImplicitBackward reports whether Conv2dBackwardInput and
// Conv2dBackwardWeight of dy, w and x under o run on conv_tex.
func ConvImplicitBackward(dy, w, x *Tensor, o Conv2dOpts) (input, weight bool) {
	g := convCheck("Conv2d", x.shape, w.shape, o)
	if in, ok := g.implicitInput(dy, w); ok {
		in.Release()
		input = true
	}
	_, _, weight = g.wgradPlan(dy, x)
	return input, weight
}

// ConvImplicitNCHW reports whether Conv2d of x and w under o stores its
// output from conv_tex directly (NCHW with the bias, no permute).
func ConvImplicitNCHW(x, w *Tensor, o Conv2dOpts) bool {
	g := convCheck("Conv2d", x.shape, w.shape, o)
	pl, _, ok := g.implicitPlan(x, w, g.n)
	return ok && g.nchwOut(pl)
}
