package tensor_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// convGradImplicitCases have Wo a multiple of 8 with stride 1 along the
// width (the weight gradient on conv_tex) and, where the stride is 1,
// Cout/groups*kH*kW a multiple of 8 (the input gradient on conv_tex):
// padding, dilation, a row stride, rectangular kernels, groups, depthwise,
// and kernels 8 and 5 wide (whole kernel rows per invocation, TAPS). The
// ones outside either rule check the fallback.
var convGradImplicitCases = []ref.Conv{
	{N: 2, Cin: 4, H: 10, W: 10, Cout: 8, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 3, Cin: 3, H: 9, W: 8, Cout: 8, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, Cin: 2, H: 8, W: 16, Cout: 8, KH: 3, KW: 2, SH: 1, SW: 1, PH: 2, PW: 1, DH: 2, DW: 2, Groups: 1},
	{N: 2, Cin: 4, H: 6, W: 8, Cout: 16, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2},
	{N: 2, Cin: 4, H: 5, W: 8, Cout: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 4}, // depthwise
	{N: 2, Cin: 2, H: 4, W: 15, Cout: 8, KH: 1, KW: 8, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, Cin: 3, H: 6, W: 12, Cout: 8, KH: 2, KW: 5, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},              // 5 taps a run
	{N: 3, Cin: 8, H: 8, W: 9, Cout: 5, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, // neither
}

// TestConv2dImplicitBackward runs both backward passes of every case on
// conv_tex where the device and layout allow it (lavapipe), whatever the
// problem's size, against the float64 reference.
func TestConv2dImplicitBackward(t *testing.T) {
	d := devtest.Open(t)
	tensor.SetConvImplicit(1)
	t.Cleanup(func() { tensor.SetConvImplicit(0) })
	var checks []opCheck
	for ci, c := range convGradImplicitCases {
		ho, wo := c.Out()
		xs, ws, ys := []int{c.N, c.Cin, c.H, c.W}, []int{c.Cout, c.Cin / c.Groups, c.KH, c.KW}, []int{c.N, c.Cout, ho, wo}
		for _, dt := range opDTypes {
			what := fmt.Sprintf("case %d %s", ci, dt)
			x, xv := opRand(t, d, uint64(ci), 1, dt, xs...)
			w, wv := opRand(t, d, uint64(ci)+100, 1, dt, ws...)
			dy, dyv := opRand(t, d, uint64(ci)+300, 1, dt, ys...)
			if dt != tensor.BFloat16 {
				in, wt := tensor.ConvImplicitBackward(dy, w, x, convOpts(c))
				t.Logf("%s: conv_tex for the input gradient %v, the weight gradient %v", what, in, wt)
			}
			dxw, dxs := c.BackwardInput(dyv, wv)
			checks = append(checks, opWant(t, what+" BackwardInput", tensor.Conv2dBackwardInput(dy, w, xs, convOpts(c)), dt, xs, dxw, dxs,
				ref.Tol(dt, c.Cout/c.Groups*c.KH*c.KW)))
			dww, dwws, dbw, dbws := c.BackwardWeight(dyv, xv)
			dw, db := tensor.Conv2dBackwardWeight(dy, x, ws, convOpts(c))
			checks = append(checks, opWant(t, what+" BackwardWeight dw", dw, dt, ws, dww, dwws, ref.Tol(dt, c.N*ho*wo)),
				opWant(t, what+" BackwardWeight db", db, dt, []int{c.Cout}, dbw, dbws, ref.Tol(dt, c.N*ho*wo)))
		}
	}
	opRun(checks)
}
