package main

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// stepIO holds what a training step reads and writes outside its own
// temporaries, in tensors that outlive the step, so that the step can be
// captured once and replayed (tensor.Replayer): the batch and the dropout
// seed are written before each step, and the loss, the scale and the skip
// flag are copied out after it. The learning rate is Adam's, on the device
// (nn.Adam.SetLR).
type stepIO struct {
	x, y   *tensor.Tensor // this rank's rows of the batch, Int32
	xb, yb []byte         // their bytes
	seed   *tensor.Tensor // the step's dropout seed (nn.Options.DeviceSeed); nil without dropout
	loss   *tensor.Tensor // the step's loss, fp32
	scale  *tensor.Tensor // the scale it ran with, fp32 (fp16 only)
	found  *tensor.Tensor // its skip flag, non-zero when skipped (fp16 only)

	rp       *tensor.Replayer // nil when steps are recorded
	fallback string           // why steps are recorded, "" when they replay
	direct   int              // steps recorded outside rp
}

// newStepIO makes the step's tensors for n rows of block tokens, and the
// Replayer unless fallback says why not.
func newStepIO(t *trainer, n int, fallback string) (*stepIO, error) {
	d := t.d
	io := &stepIO{x: tensor.New(d, tensor.Int32, n*t.c.block), y: tensor.New(d, tensor.Int32, n*t.c.block),
		xb: make([]byte, 4*n*t.c.block), yb: make([]byte, 4*n*t.c.block), loss: tensor.New(d, tensor.Float32, 1), fallback: fallback}
	errs := []error{io.x.Err(), io.y.Err(), io.loss.Err()}
	if t.c.dropout > 0 {
		io.seed = tensor.New(d, tensor.Int32, 1)
		errs = append(errs, io.seed.Err())
	}
	if t.sc.Enabled() {
		io.scale, io.found = tensor.New(d, tensor.Float32, 1), tensor.New(d, tensor.Float32, 1)
		errs = append(errs, io.scale.Err(), io.found.Err())
	}
	if fallback == "" {
		io.rp = tensor.NewReplayer(d)
	}
	if err := errors.Join(errs...); err != nil {
		io.close()
		return nil, err
	}
	return io, nil
}

func (io *stepIO) close() {
	if io.rp != nil {
		io.rp.Close()
	}
	for _, x := range []*tensor.Tensor{io.x, io.y, io.seed, io.loss, io.scale, io.found} {
		if x != nil {
			x.Release()
		}
	}
}

// load writes the batch rows x, y and the step's dropout seed.
func (io *stepIO) load(x, y []int32, seeds *nn.SeedSource) error {
	for i := range x {
		binary.LittleEndian.PutUint32(io.xb[4*i:], uint32(x[i]))
		binary.LittleEndian.PutUint32(io.yb[4*i:], uint32(y[i]))
	}
	errs := []error{io.x.SetBytes(io.xb), io.y.SetBytes(io.yb)}
	if io.seed != nil {
		errs = append(errs, seeds.NextTo(io.seed))
	}
	return errors.Join(errs...)
}

// run runs step: replayed where it can be, recorded otherwise. Every step
// has the same shapes, and its push constants do not change (the learning
// rate is read on the device), so one key serves them all.
func (io *stepIO) run(seeds *nn.SeedSource, step func() error) error {
	if io.rp == nil {
		io.direct++
		return step()
	}
	drawn := seeds.Step()
	err := io.rp.Step("step", step)
	if seeds.Step() != drawn { // a graph drew a seed: a push constant a replay would repeat
		io.fallback = "a step drew a dropout seed"
		io.rp.Close()
		io.rp = nil
	}
	return err
}

// stats says how many steps ran each way, and why none replayed if so.
func (io *stepIO) stats() string {
	rec, capt, rep := io.direct, 0, 0
	if io.rp != nil {
		rec, capt, rep = rec+io.rp.Recorded, io.rp.Captured, io.rp.Replayed
	}
	s := fmt.Sprintf("steps: %d replayed, %d captured, %d recorded", rep, capt, rec)
	if io.fallback != "" {
		s += " (replay off: " + io.fallback + ")"
	}
	return s
}
