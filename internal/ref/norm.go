package ref

import "math"

// Float64 references of batch normalisation, the negative log-likelihood
// and Adadelta, with PyTorch's formulas.

// BatchNorm64 normalises x [n, c, s] per channel: with the batch's mean
// and biased variance when training, else with runMean and runVar. It
// returns y and, when training, each channel's mean and unbiased variance
// (what the running statistics are updated from).
func BatchNorm64(x, gamma, beta, runMean, runVar []float64, n, c, s int, eps float64, training bool) (y, mean, uvar []float64) {
	y = make([]float64, len(x))
	mean, uvar = make([]float64, c), make([]float64, c)
	m := float64(n * s)
	for ch := range c {
		var mu, v float64
		if training {
			for b := range n {
				for i := range s {
					mu += x[(b*c+ch)*s+i]
				}
			}
			mu /= m
			for b := range n {
				for i := range s {
					d := x[(b*c+ch)*s+i] - mu
					v += d * d
				}
			}
			mean[ch], uvar[ch] = mu, v/(m-1)
			v /= m
		} else {
			mu, v = runMean[ch], runVar[ch]
		}
		rstd := 1 / math.Sqrt(v+eps)
		for b := range n {
			for i := range s {
				k := (b*c+ch)*s + i
				y[k] = (x[k]-mu)*rstd*gamma[ch] + beta[ch]
			}
		}
	}
	return y, mean, uvar
}

// RunningUpdate64 is PyTorch's running-statistics update: running =
// (1 - momentum) * running + momentum * batch, in place.
func RunningUpdate64(running, batch []float64, momentum float64) {
	for i := range running {
		running[i] = (1-momentum)*running[i] + momentum*batch[i]
	}
}

// NLL64 returns the negative log-likelihood of logp [rows, cols] at the
// labels, averaged over rows when mean is set, else summed.
func NLL64(logp []float64, labels []int32, cols int, mean bool) float64 {
	var s float64
	for r, y := range labels {
		s -= logp[r*cols+int(y)]
	}
	if mean {
		s /= float64(len(labels))
	}
	return s
}

// LogSoftmax64 returns the log-softmax of each row of cols elements.
func LogSoftmax64(x []float64, cols int) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		m := math.Inf(-1)
		for _, v := range x[r : r+cols] {
			m = max(m, v)
		}
		var s float64
		for _, v := range x[r : r+cols] {
			s += math.Exp(v - m)
		}
		for i := range cols {
			y[r+i] = x[r+i] - m - math.Log(s)
		}
	}
	return y
}

// Adadelta64 is one step of torch.optim.Adadelta on w, in place, with its
// running averages sq (of squared gradients) and acc (of squared updates).
func Adadelta64(w, g, sq, acc []float64, lr, rho, eps, weightDecay float64) {
	for j := range w {
		gj := g[j] + weightDecay*w[j]
		sq[j] = rho*sq[j] + (1-rho)*gj*gj
		delta := math.Sqrt(acc[j]+eps) / math.Sqrt(sq[j]+eps) * gj
		acc[j] = rho*acc[j] + (1-rho)*delta*delta
		w[j] -= lr * delta
	}
}
