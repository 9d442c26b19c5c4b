package tensor

import (
	"errors"
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// ErrLoopLimit is carried by a result that the device cannot compute
// correctly: lavapipe's shader compiler (llvmpipe's loop limiter) ends a
// kernel invocation's loops after 65535 iterations in all, without an
// error, so an invocation that would loop longer returns wrong numbers (a
// sum over 2^19 rows came out 65535). Nesting loops does not help: the
// limit counts every iteration of every loop of the invocation.
var ErrLoopLimit = errors.New("tensor: the kernel would loop past the driver's limit")

// loopLimit is the most loop iterations one kernel invocation may run on
// d, or 0 for no limit (forms.go).
func loopLimit(d *vk.Device) int { return formsOf(d).loopLimit }

// loopErr returns an error wrapping ErrLoopLimit when a kernel invocation
// would run iters loop iterations past d's limit; what says where they
// come from.
func loopErr(d *vk.Device, what string, iters int) error {
	if limit := loopLimit(d); limit != 0 && iters > limit {
		return fmt.Errorf("%s needs %d loop iterations in one kernel invocation; %s stops after %d and would return wrong values: %w",
			what, iters, d.Info().Name, limit, ErrLoopLimit)
	}
	return nil
}

// checkLoops makes out carry loopErr's error for op and reports whether out
// is still good to launch into.
func checkLoops(out *Tensor, op string, iters int, what string) bool {
	if out.err != nil {
		return false
	}
	if err := loopErr(out.dev, what, iters); err != nil {
		out.fail(fmt.Errorf("tensor: %s: %w", op, err))
		return false
	}
	return true
}

// checkLoopsN is checkLoops whose what is format with n, formatted only on
// failure: ops check on every launch, and rarely fail.
func checkLoopsN(out *Tensor, op string, iters int, format string, n int) bool {
	if out.err != nil {
		return false
	}
	if limit := loopLimit(out.dev); limit != 0 && iters > limit {
		return checkLoops(out, op, iters, fmt.Sprintf(format, n))
	}
	return true
}
