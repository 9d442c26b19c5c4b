package tensor

import "github.com/vkamp/vkamp/tensor/internal/kernels"

// AdadeltaConfig is one Adadelta step with PyTorch's formulas:
// g += WeightDecay*w; v = Rho*v + (1-Rho)*g^2;
// delta = sqrt(u + Eps) / sqrt(v + Eps) * g; u = Rho*u + (1-Rho)*delta^2;
// w -= LR*delta, with v moment 0 and u moment 1.
type AdadeltaConfig struct {
	LR, Rho, Eps, WeightDecay float32
	// LRTensor, when set, is read in place of LR when the step runs, as
	// AdamConfig.LRTensor.
	LRTensor *Tensor
}

// AdadeltaStep records an Adadelta step over every parameter unless skip
// is non-zero when it runs, as SGDStep does. The state must keep two
// moments.
func (s *OptimizerState) AdadeltaStep(c AdadeltaConfig, skip *Tensor) error {
	if s == nil || s.moments[1] == nil {
		usagePanic("AdadeltaStep", "Adadelta needs an OptimizerState with two moments")
	}
	p := kernels.AdadeltaPush{Lr: c.LR, Rho: c.Rho, Eps: c.Eps, WeightDecay: c.WeightDecay}
	s.noHalves("AdadeltaStep")
	lr, lrDev, err := s.lrBinding("AdadeltaStep", c.LRTensor)
	if err != nil {
		return err
	}
	if lrDev {
		p.Lr = 0 // read on the device: a constant push, so that a traced step matches its graph
	}
	return s.step("AdadeltaStep", skip, &optLayout, s.active(), func(g *blockGroup, flag *Tensor) error {
		p.Nchunks = uint32(g.chunks)
		spec := kernels.AdadeltaSpec{Vec4: s.vec4, LrDev: lrDev}
		b := kernels.AdadeltaBind{P: g.bind[0], G: g.bind[1], M: g.bind[2], Table: g.table, Found: flag.buf, V: g.bind[3], Lr: lr.buf}
		if s.texels(flag.dev, b.P, b.G, b.M, b.V) {
			return kernels.AdadeltaTex(flag.dev, g.grid(), kernels.AdadeltaTexSpec(spec), kernels.AdadeltaTexPush(p), kernels.AdadeltaTexBind{
				P: b.P, G: b.G, M: b.M, Table: b.Table, Found: b.Found, V: b.V, Lr: b.Lr, ParamTex: b.P, GradTex: b.G, M1Tex: b.M, M2Tex: b.V})
		}
		return kernels.Adadelta(flag.dev, g.grid(), spec, p, b)
	})
}
