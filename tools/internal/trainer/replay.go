package trainer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// A step reads its batch from input tensors that stay alive between steps
// and leaves its loss and skip flag in others, so that it can be captured
// once and replayed (tensor.Replayer): what changes per step is written
// into those tensors before the step, and read from them after it.
type stepIO struct {
	// On a GPU the training images live on the device (data), in the
	// batch's dtype (inputDType), uploaded once: each step's batch is
	// gathered there, by the indices written into idx, so the host writes
	// 4 bytes per sample, not a row, and nothing crosses the bus but them
	// (PyTorch's dataset moved to the GPU). On a CPU driver, or when they
	// do not fit (hostWhy says why), x is written instead: the rows
	// gathered on the host.
	data, idx *tensor.Tensor
	ib        []byte            // idx's bytes
	hostWhy   string            // why the batch is written from the host; "" when data is used
	key       string            // the Replayer's key: the batch's shape
	x, y      *tensor.Tensor    // the batch (x nil when data is used) and its labels, written before each step
	yb        []byte            // y's bytes
	x16       []uint16          // the training images in x's dtype when it is 16-bit (inputDType) and x is used, else nil
	sum       *tensor.Tensor    // the epoch's running loss sum
	last      *tensor.Tensor    // the last step's loss
	found     *tensor.Tensor    // the last step's skip flag (fp16)
	seed      *tensor.Tensor    // the step's dropout seed (nn.Options.DeviceSeed), written before each step; nil without dropout
	skips     [8]*tensor.Tensor // the skip flags of the last 8 steps, by step mod 8

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

// DataOnDevice reports whether the training images live on the device,
// each step's batch gathered there from the indices the host writes, and
// if not why: each batch's rows are then gathered on the host and written.
func (t *Trainer) DataOnDevice() (bool, string) { return t.io.data != nil, t.io.hostWhy }

// initIO makes the persistent tensors of the step, and the Replayer if the
// step can be replayed.
func (t *Trainer) initIO() error {
	o, d := t.o, t.o.Device
	io := &t.io
	n := o.Batch / o.Group.Size()
	in := t.inputDType()
	var x16 []uint16
	if in != tensor.Float32 {
		x16 = make([]uint16, len(o.Train.Images))
		tensor.Encode16(in, x16, o.Train.Images)
	}
	var errs []error
	switch {
	case batchesOn == onHost:
		io.hostWhy = "the host's gather is forced (a test)"
	case batchesOn == onAuto && d.Info().Type == vk.TypeCPU:
		// The device's memory is the host's: a host copy of the rows is
		// the cheapest gather there is (lavapipe, the MLP's fp16 batch of
		// 64: 21-22 us of host time with the caches cold, BenchmarkGather,
		// against 0.26-0.33 ms of index_select_tex on a loaded machine).
		io.hostWhy = "a CPU driver: the host's copy of the rows is the cheaper gather"
	default:
		var err error
		if io.data, io.hostWhy, err = upload(d, in, t.inputShape(o.Train.N), x16, o.Train.Images); err != nil {
			return err
		}
	}
	if io.data != nil {
		io.idx, io.ib = tensor.New(d, tensor.Int32, n), make([]byte, 4*n)
		errs = append(errs, io.idx.Err())
	} else {
		io.x, io.x16 = tensor.New(d, in, t.inputShape(n)...), x16
		errs = append(errs, io.x.Err())
	}
	io.key = fmt.Sprint(t.inputShape(n))
	io.y, io.yb = tensor.New(d, tensor.Int32, n), make([]byte, 4*n)
	io.sum, io.last, io.found = tensor.New(d, tensor.Float32, 1), tensor.New(d, tensor.Float32, 1), tensor.New(d, tensor.Float32, 1)
	errs = append(errs, io.y.Err(), io.sum.Err(), io.last.Err(), io.found.Err())
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

// upload makes the training images a device tensor of shape, in dtype in
// (x16 holds them when in is 16-bit, else images does). A tensor the device
// cannot hold (out of memory, or over its maxStorageBufferRange) is no
// error: upload then returns nil and why, and batches are gathered on the
// host. A failure to write is one.
func upload(d *vk.Device, in tensor.DType, shape []int, x16 []uint16, images []float32) (*tensor.Tensor, string, error) {
	data := tensor.New(d, in, shape...)
	if err := data.Err(); err != nil {
		data.Release()
		return nil, err.Error(), nil
	}
	var err error
	if x16 != nil {
		err = data.Write16s(func(dst []uint16) { copy(dst, x16) })
	} else {
		err = data.WriteFloat32s(func(dst []float32) { copy(dst, images) })
	}
	if err != nil {
		data.Release()
		return nil, "", fmt.Errorf("trainer: upload the training set: %w", err)
	}
	return data, "", nil
}

// batchesOn chooses where batches are gathered: onAuto by the device
// (initIO); tests force the others.
var batchesOn = onAuto

const (
	onAuto = iota
	onHost
	onDevice
)

// batch returns the step's input: the rows of data that idx names,
// gathered on the device into a tensor the caller releases after the step,
// or x as load wrote it (release false).
func (io *stepIO) batch() (x *tensor.Tensor, release bool) {
	if io.data == nil {
		return io.x, false
	}
	return tensor.IndexSelect(io.data, io.idx), true
}

func (io *stepIO) close() {
	if io.rp != nil {
		io.rp.Close()
	}
	for _, x := range append([]*tensor.Tensor{io.data, io.idx, io.x, io.y, io.sum, io.last, io.found, io.seed}, io.skips[:]...) {
		if x != nil {
			x.Release()
		}
	}
}

// load writes the samples idx of s into the step's input tensors: their
// indices into the device's training set, or their rows.
func (io *stepIO) load(px int, images []float32, labels []uint8, idx []int) error {
	var errX error
	if io.data != nil {
		for j, k := range idx {
			binary.LittleEndian.PutUint32(io.ib[4*j:], uint32(k))
		}
		errX = io.idx.SetBytes(io.ib)
	} else if io.x16 != nil {
		// The rows are gathered straight into x's memory (or its upload's).
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
// It reads each row's first and last value before copying any: the rows
// lie scattered over the training set, and the first touch of each page
// misses the TLB. Read in one loop those misses overlap; the copies alone
// take them one after another (lavapipe, the MLP's fp16 batch of 64 after a
// step: dispatch/host-us 4.3 to 3.3, a step's host time 95 to 74 us).
func gather[T uint16 | float32](dst, src []T, px int, idx []int) {
	var s T
	for _, k := range idx {
		s += src[k*px] + src[(k+1)*px-1]
	}
	runtime.KeepAlive(s) // the reads are the point: keep them
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
	err := io.rp.Step(io.key, step)
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
