package nn

import (
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// Learning-rate schedules are functions of the step (the iteration count,
// from 0): set the optimizer's LR from one before each step,
//
//	lr := nn.CosineWithWarmup(6e-4, 6e-5, 2000, 600000)
//	for it := start; it < maxIters; it++ {
//		opt.SetLR(lr(it))
//		...
//	}
//
// A schedule has no state but the step, so a checkpoint needs only the step
// to resume it: save it in SaveCheckpoint's extra sections,
//
//	extra := map[string]json.RawMessage{"iter": json.RawMessage(strconv.Itoa(it))}
//
// and read it back from LoadCheckpoint's with json.Unmarshal. Count iterations, not
// opt.Steps(): under AMP a skipped step does not advance the optimizer's
// count, and PyTorch's schedulers (and nanoGPT's get_lr) go by iterations.
// A schedule that reaches an LR of 0 needs the optimizer's ZeroLR.

// StepLR is torch.optim.lr_scheduler.StepLR: base * gamma^(step/stepSize),
// the division rounding down. stepSize must be at least 1 and base and
// gamma finite and not negative, else it panics with a *tensor.UsageError.
func StepLR(base float64, stepSize int, gamma float64) func(step int) float64 {
	checkSchedule("StepLR", base, gamma)
	if stepSize < 1 {
		panic(&tensor.UsageError{Op: "StepLR", Msg: fmt.Sprintf("step size %d: want at least 1", stepSize)})
	}
	return func(step int) float64 {
		return base * math.Pow(gamma, float64(max(step, 0)/stepSize))
	}
}

// LinearWarmup rises linearly to base over warmup steps, as nanoGPT's
// warm-up: base * (step+1)/(warmup+1) for step < warmup, then base. warmup
// 0 is base from the start. base must be finite and not negative, warmup
// not negative, else it panics with a *tensor.UsageError.
func LinearWarmup(base float64, warmup int) func(step int) float64 {
	checkSchedule("LinearWarmup", base)
	if warmup < 0 {
		panic(&tensor.UsageError{Op: "LinearWarmup", Msg: fmt.Sprintf("warm-up %d: want at least 0", warmup)})
	}
	return func(step int) float64 {
		step = max(step, 0)
		if step < warmup {
			return base * float64(step+1) / float64(warmup+1)
		}
		return base
	}
}

// CosineWithWarmup is nanoGPT's get_lr: a linear warm-up to maxLR,
// maxLR * (step+1)/(warmup+1) for step < warmup; then a cosine decay from
// maxLR at step warmup to minLR at step decaySteps (nanoGPT's
// lr_decay_iters), minLR + (maxLR-minLR) * (1 + cos(pi*r))/2 with
// r = (step-warmup)/(decaySteps-warmup); minLR after decaySteps. With
// decaySteps == warmup there is no decay: minLR from warmup on (nanoGPT
// would divide by zero there). LRs must be finite and not negative,
// 0 <= warmup <= decaySteps, else it panics with a *tensor.UsageError.
// Negative steps count as 0.
func CosineWithWarmup(maxLR, minLR float64, warmup, decaySteps int) func(step int) float64 {
	checkSchedule("CosineWithWarmup", maxLR, minLR)
	if warmup < 0 || decaySteps < warmup {
		panic(&tensor.UsageError{Op: "CosineWithWarmup", Msg: fmt.Sprintf("warm-up %d and decay steps %d: want 0 <= warm-up <= decay steps", warmup, decaySteps)})
	}
	return func(step int) float64 {
		step = max(step, 0)
		if step < warmup {
			return maxLR * float64(step+1) / float64(warmup+1)
		}
		if step >= decaySteps { // nanoGPT: > ; equal where the cosine gives minLR anyway
			return minLR
		}
		r := float64(step-warmup) / float64(decaySteps-warmup)
		return minLR + 0.5*(1+math.Cos(math.Pi*r))*(maxLR-minLR)
	}
}

func checkSchedule(op string, vs ...float64) {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("%g: want a finite value >= 0", v)})
		}
	}
}
