package trainer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

// A step reads its batch from input tensors that stay alive between steps
// and leaves its loss and skip flag in others, so that it can be captured
// once and replayed (tensor.Replayer): what changes per step is written
// into those tensors before the step, and read from them after it.
type stepIO struct {
	x, y  *tensor.Tensor    // the batch, written before each step
	yb    []byte            // y's bytes
	x16   []uint16          // the training images in x's dtype when it is 16-bit (inputDType), else nil
	sum   *tensor.Tensor    // the epoch's running loss sum
	last  *tensor.Tensor    // the last step's loss
	found *tensor.Tensor    // the last step's skip flag (fp16)
	seed  *tensor.Tensor    // the step's dropout seed (nn.Options.DeviceSeed), written before each step; nil without dropout
	skips [8]*tensor.Tensor // the skip flags of the last 8 steps, by step mod 8

	rp       *tensor.Replayer // nil without Options.Replay
	fallback string           // why steps are recorded, not replayed; "" if they are replayed
	direct   int              // steps recorded outside rp
}

// ReplayStats counts the training steps run each way.
type ReplayStats struct {
	Recorded, Captured, Replayed int
	// Fallback says why every step is recorded ("" when steps replay).
	Fallback string
}

// ReplayStats returns how many steps were recorded, captured and replayed.
func (t *Trainer) ReplayStats() ReplayStats {
	s := ReplayStats{Recorded: t.io.direct, Fallback: t.io.fallback}
	if t.io.rp != nil {
		s.Recorded += t.io.rp.Recorded
		s.Captured, s.Replayed = t.io.rp.Captured, t.io.rp.Replayed
	}
	return s
}

// initIO makes the persistent tensors of the step, and the Replayer if the
// step can be replayed.
func (t *Trainer) initIO() error {
	o, d := t.o, t.o.Device
	io := &t.io
	n := o.Batch / o.Group.Size()
	in := t.inputDType()
	io.x, io.y = tensor.New(d, in, t.inputShape(n)...), tensor.New(d, tensor.Int32, n)
	if in != tensor.Float32 {
		io.x16 = make([]uint16, len(o.Train.Images))
		tensor.Encode16(in, io.x16, o.Train.Images)
	}
	io.yb = make([]byte, 4*n)
	io.sum, io.last, io.found = tensor.New(d, tensor.Float32, 1), tensor.New(d, tensor.Float32, 1), tensor.New(d, tensor.Float32, 1)
	errs := []error{io.x.Err(), io.y.Err(), io.sum.Err(), io.last.Err(), io.found.Err()}
	if hasDropout(t.model) {
		io.seed = tensor.New(d, tensor.Int32, 1)
		errs = append(errs, io.seed.Err())
	}
	for i := range io.skips {
		io.skips[i] = tensor.Zeros(d, tensor.Float32, 1)
		errs = append(errs, io.skips[i].Err())
	}
	switch {
	case !o.Replay:
		io.fallback = "off"
	case o.Group.Size() > 1:
		io.fallback = "data-parallel: the all-reduce runs on the host"
	case o.AfterBackward != nil:
		io.fallback = "AfterBackward runs on the host"
	default:
		io.rp = tensor.NewReplayer(d)
	}
	return errors.Join(errs...)
}

func (io *stepIO) close() {
	if io.rp != nil {
		io.rp.Close()
	}
	for _, x := range append([]*tensor.Tensor{io.x, io.y, io.sum, io.last, io.found, io.seed}, io.skips[:]...) {
		if x != nil {
			x.Release()
		}
	}
}

// load writes the samples idx of s into the step's input tensors.
func (io *stepIO) load(px int, images []float32, labels []uint8, idx []int) error {
	// The rows are gathered straight into x's memory (or its upload's).
	var errX error
	if io.x16 != nil {
		errX = io.x.Write16s(func(dst []uint16) { gather(dst, io.x16, px, idx) })
	} else {
		errX = io.x.WriteFloat32s(func(dst []float32) { gather(dst, images, px, idx) })
	}
	for j, k := range idx {
		binary.LittleEndian.PutUint32(io.yb[4*j:], uint32(labels[k]))
	}
	return errors.Join(errX, io.y.SetBytes(io.yb))
}

// gather copies the rows idx of src, px values each, into dst in order.
func gather[T any](dst, src []T, px int, idx []int) {
	for j, k := range idx {
		copy(dst[j*px:(j+1)*px], src[k*px:(k+1)*px])
	}
}

// hasDropout reports whether the model drops anything while training.
func hasDropout(m nn.Sequential) bool {
	for _, l := range m {
		if d, ok := l.(*nn.Dropout); ok && d.P > 0 {
			return true
		}
	}
	return false
}

// run runs one step: replayed where it can be, recorded otherwise. The key
// names what the recorded work depends on besides the tensors: the batch
// shape (every optimizer reads its learning rate on the device, so a new
// epoch's rate needs no new capture). A model with dropout
// draws the step's seed here, into the tensor its graph reads it from
// (nn.Options.DeviceSeed): the draw a recorded graph would make, so both
// ways give the same masks.
func (t *Trainer) run(step func() error) error {
	io := &t.io
	if io.seed != nil {
		if err := t.seeds.NextTo(io.seed); err != nil {
			return err
		}
	}
	if io.rp == nil || io.fallback != "" {
		io.direct++
		return step()
	}
	drawn := t.seeds.Step()
	err := io.rp.Step(fmt.Sprint(io.x.Shape()), step)
	if t.seeds.Step() != drawn {
		// The step's graph drew a dropout seed itself, a push constant
		// that changes every step: a replay would repeat the mask. The
		// Replayer records a key's first step, so no step with a seed was
		// captured. (Dropout layers read io.seed: this guards the others.)
		io.fallback = "dropout draws a seed per step"
	}
	return err
}

// Skipped tells whether a step was skipped for an inf or NaN gradient.
type Skipped struct {
	t    *Trainer
	step int // the run's step count when it ran
	flag *tensor.Tensor
}

// Value waits for the step and reports whether it was skipped. It must be
// read within 8 steps; later it returns scaler.ErrStale.
func (k Skipped) Value() (bool, error) {
	if k.flag == nil {
		return false, nil
	}
	if k.t.steps-k.step > len(k.t.io.skips) {
		return false, scaler.ErrStale
	}
	v, err := k.flag.Item()
	return v != 0, err
}
