package ref

import "math"

// Conv is a 2-D convolution in NCHW, as PyTorch's conv2d: input [N, Cin, H,
// W], weight [Cout, Cin/Groups, KH, KW]. Stride and dilation must be >= 1
// and Groups >= 1 (the reference takes no defaults).
type Conv struct {
	N, Cin, H, W, Cout, KH, KW int
	SH, SW, PH, PW, DH, DW     int
	Groups                     int
}

// Out returns the output size Ho, Wo.
func (c Conv) Out() (ho, wo int) {
	return (c.H+2*c.PH-c.DH*(c.KH-1)-1)/c.SH + 1, (c.W+2*c.PW-c.DW*(c.KW-1)-1)/c.SW + 1
}

// taps calls f for every (output, input, weight) index triple of the
// convolution whose input index is inside the image.
func (c Conv) taps(f func(yi, xi, wi int)) {
	ho, wo := c.Out()
	cg, og := c.Cin/c.Groups, c.Cout/c.Groups
	for n := range c.N {
		for co := range c.Cout {
			g := co / og
			for oh := range ho {
				for ow := range wo {
					yi := ((n*c.Cout+co)*ho+oh)*wo + ow
					for ci := range cg {
						for i := range c.KH {
							h := oh*c.SH - c.PH + i*c.DH
							if h < 0 || h >= c.H {
								continue
							}
							for j := range c.KW {
								w := ow*c.SW - c.PW + j*c.DW
								if w < 0 || w >= c.W {
									continue
								}
								xi := ((n*c.Cin+g*cg+ci)*c.H+h)*c.W + w
								wi := ((co*cg+ci)*c.KH+i)*c.KW + j
								f(yi, xi, wi)
							}
						}
					}
				}
			}
		}
	}
}

// Forward returns y [N, Cout, Ho, Wo] and the sums of absolute products
// (the scale of each result's rounding error); b may be nil.
func (c Conv) Forward(x, w, b []float32) (y, scale []float64) {
	var b64 []float64
	if b != nil {
		b64 = To64(b)
	}
	return c.Forward64(To64(x), To64(w), b64)
}

// To64 widens v to float64.
func To64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Forward64 is Forward on float64 values, for finite differences.
func (c Conv) Forward64(x, w, b []float64) (y, scale []float64) {
	ho, wo := c.Out()
	y = make([]float64, c.N*c.Cout*ho*wo)
	scale = make([]float64, len(y))
	c.taps(func(yi, xi, wi int) {
		p := x[xi] * w[wi]
		y[yi] += p
		scale[yi] += math.Abs(p)
	})
	if b != nil {
		for i := range y {
			co := i / (ho * wo) % c.Cout
			y[i] += b[co]
			scale[i] += math.Abs(b[co])
		}
	}
	return y, scale
}

// BackwardInput returns dx [N, Cin, H, W] for upstream gradient dy, with
// its scale.
func (c Conv) BackwardInput(dy, w []float32) (dx, scale []float64) {
	dx = make([]float64, c.N*c.Cin*c.H*c.W)
	scale = make([]float64, len(dx))
	c.taps(func(yi, xi, wi int) {
		p := float64(dy[yi]) * float64(w[wi])
		dx[xi] += p
		scale[xi] += math.Abs(p)
	})
	return dx, scale
}

// BackwardWeight returns dw [Cout, Cin/Groups, KH, KW] and db [Cout] for
// upstream gradient dy and input x, with their scales.
func (c Conv) BackwardWeight(dy, x []float32) (dw, dwScale, db, dbScale []float64) {
	dw = make([]float64, c.Cout*c.Cin/c.Groups*c.KH*c.KW)
	dwScale = make([]float64, len(dw))
	c.taps(func(yi, xi, wi int) {
		p := float64(dy[yi]) * float64(x[xi])
		dw[wi] += p
		dwScale[wi] += math.Abs(p)
	})
	ho, wo := c.Out()
	db = make([]float64, c.Cout)
	dbScale = make([]float64, c.Cout)
	for i, v := range dy {
		co := i / (ho * wo) % c.Cout
		db[co] += float64(v)
		dbScale[co] += math.Abs(float64(v))
	}
	return dw, dwScale, db, dbScale
}

// Pool is a 2-D pooling of planes [Planes, H, W] into [Planes, Ho, Wo]: max
// or average over windows of KH x KW with stride and padding, as PyTorch's
// max_pool2d and avg_pool2d (count_include_pad, no ceil mode), or, with
// Adaptive, adaptive average pooling to Ho x Wo.
type Pool struct {
	Planes, H, W           int
	KH, KW, SH, SW, PH, PW int
	Adaptive               bool
	Ho, Wo                 int // the output size when Adaptive; else computed
}

// Out returns the output size.
func (p Pool) Out() (ho, wo int) {
	if p.Adaptive {
		return p.Ho, p.Wo
	}
	return (p.H+2*p.PH-p.KH)/p.SH + 1, (p.W+2*p.PW-p.KW)/p.SW + 1
}

// window returns the input range [start, end) of output index o along an
// axis.
func (p Pool) window(o, in, out, k, s, pad int) (int, int) {
	if p.Adaptive {
		return o * in / out, ((o+1)*in + out - 1) / out
	}
	start := o*s - pad
	return max(start, 0), min(start+k, in)
}

// each calls f for every output element with its plane, its index, and its
// window's rows and columns.
func (p Pool) each(f func(plane, o, h0, h1, w0, w1 int)) {
	ho, wo := p.Out()
	for pl := range p.Planes {
		for oh := range ho {
			h0, h1 := p.window(oh, p.H, ho, p.KH, p.SH, p.PH)
			for ow := range wo {
				w0, w1 := p.window(ow, p.W, wo, p.KW, p.SW, p.PW)
				f(pl, (pl*ho+oh)*wo+ow, h0, h1, w0, w1)
			}
		}
	}
}

// Max returns the max pooling of x and each output's argmax (h*W + w in its
// plane, the first maximum; NaN wins).
func (p Pool) Max(x []float32) (y []float64, arg []int32) { return p.Max64(To64(x)) }

// Max64 is Max on float64 values.
func (p Pool) Max64(x []float64) (y []float64, arg []int32) {
	ho, wo := p.Out()
	y = make([]float64, p.Planes*ho*wo)
	arg = make([]int32, len(y))
	p.each(func(pl, o, h0, h1, w0, w1 int) {
		m, at := math.Inf(-1), h0*p.W+w0
	scan:
		for h := h0; h < h1; h++ {
			for w := w0; w < w1; w++ {
				v := x[(pl*p.H+h)*p.W+w]
				if v > m || math.IsNaN(v) {
					m, at = v, h*p.W+w
					if math.IsNaN(v) {
						break scan
					}
				}
			}
		}
		y[o], arg[o] = m, int32(at)
	})
	return y, arg
}

// MaxBackward returns the gradient of Max: dy routed to each argmax.
func (p Pool) MaxBackward(dy []float32, arg []int32) []float64 {
	ho, wo := p.Out()
	dx := make([]float64, p.Planes*p.H*p.W)
	for o, v := range dy {
		pl := o / (ho * wo)
		dx[pl*p.H*p.W+int(arg[o])] += float64(v)
	}
	return dx
}

// divisor is what an output's window sum is divided by.
func (p Pool) divisor(h0, h1, w0, w1 int) float64 {
	if p.Adaptive {
		return float64((h1 - h0) * (w1 - w0))
	}
	return float64(p.KH * p.KW)
}

// Avg returns the average pooling of x.
func (p Pool) Avg(x []float32) []float64 { return p.Avg64(To64(x)) }

// Avg64 is Avg on float64 values.
func (p Pool) Avg64(x []float64) []float64 {
	ho, wo := p.Out()
	y := make([]float64, p.Planes*ho*wo)
	p.each(func(pl, o, h0, h1, w0, w1 int) {
		for h := h0; h < h1; h++ {
			for w := w0; w < w1; w++ {
				y[o] += x[(pl*p.H+h)*p.W+w]
			}
		}
		y[o] /= p.divisor(h0, h1, w0, w1)
	})
	return y
}

// AvgBackward returns the gradient of Avg.
func (p Pool) AvgBackward(dy []float32) []float64 {
	dx := make([]float64, p.Planes*p.H*p.W)
	p.each(func(pl, o, h0, h1, w0, w1 int) {
		for h := h0; h < h1; h++ {
			for w := w0; w < w1; w++ {
				dx[(pl*p.H+h)*p.W+w] += float64(dy[o]) / p.divisor(h0, h1, w0, w1)
			}
		}
	})
	return dx
}
