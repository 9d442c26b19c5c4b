package tensor

import (
	"errors"
	"math/bits"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// ErrBadProbs is what the *AssertError of Multinomial matches with
// errors.Is: a row of probabilities with a negative, NaN or infinite
// entry, or one summing to 0 (torch.multinomial's "invalid multinomial
// distribution").
var ErrBadProbs = errors.New("tensor: invalid multinomial distribution")

// Multinomial draws samples column indices from each row of probs ([n] or
// [rows, n], any floating dtype) with probability proportional to the
// row's values, with replacement, as torch.multinomial(probs, samples,
// replacement=True) with a generator seeded by seed: Int32 [samples] or
// [rows, samples]. The draws are a hash of (seed, row, sample) and the
// row's running sums (CumSum, in fp32), made on the device: a captured
// step replays them unless the seed changes, and the same seed gives the
// same draws on every device where the running sums agree (always in
// deterministic mode). A zero-probability column is never drawn. A row
// with a negative, NaN or infinite entry or a zero sum raises the
// device's assert (its draws are -1): the next read returns an
// *AssertError matching ErrBadProbs, naming the row and the column (-1
// for a zero sum). samples below 1 panics with a *UsageError, an Int32
// probs with a *DTypeError.
func Multinomial(probs *Tensor, samples int, seed uint32) *Tensor {
	const op = "Multinomial"
	n := checkLastAxis(op, probs)
	if len(probs.shape) > 2 {
		usagePanic(op, "probs of shape %v: want [n] or [rows, n]", probs.shape)
	}
	if samples < 1 {
		usagePanic(op, "%d samples: want at least 1", samples)
	}
	rows := probs.n / n
	shape := []int{rows, samples}
	if len(probs.shape) == 1 {
		shape = []int{samples}
	}
	out := newOut(probs.dev, Int32, shape, probs)
	if out.err != nil {
		return out
	}
	cdf := CumSum(probs, -1, Float32)
	defer cdf.Release() // the device keeps it until the draws have run
	if err := cdf.Err(); err != nil {
		launched(out, err)
		return out
	}
	// A row's invocation checks its n columns, then binary-searches them
	// for each draw.
	if !checkLoopsN(out, op, n+samples*(bits.Len(uint(n))+1), "rows of %d columns", n) {
		return out
	}
	p := kernels.MultinomialPush{Rows: uint32(rows), N: uint32(n), Samples: uint32(samples), Seed: seed}
	recordInto(op, func() error {
		return withAssert(out.dev, func(rec *vk.Buffer) error {
			return kernels.Multinomial(out.dev, groups1D(out, rows), kernels.MultinomialSpec{In0DT: probs.dtype.code(), AssertOp: assertMultinomial}, p,
				kernels.MultinomialBind{Probs: probs.buf, Cdf: cdf.buf, D: out.buf, Assert: rec})
		})
	}, out)
	return out
}
