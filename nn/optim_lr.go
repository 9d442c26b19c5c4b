package nn

import (
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// deviceLR keeps an optimizer's learning rate of each part in a one-element
// tensor that its step reads when it runs (the LRTensor of tensor's
// AdamConfig, SGDConfig and AdadeltaConfig), as PyTorch's capturable Adam
// keeps a tensor lr: a step captured by a tensor.Replayer replays with the
// rate set before each replay, so a schedule (CosineWithWarmup, StepLR)
// changes it without a new capture. Each tensor holds float32(lr * the
// part's scale), the value a push constant would carry, so the step's bits
// are the same either way.
type deviceLR struct {
	ts   []*tensor.Tensor // per part
	vals []uint32         // the bits each holds
}

// rateOnDevice gives o its learning rate on the device, holding lr; on
// failure it closes o.
func (o *optimizer) rateOnDevice(lr float64) error {
	l := &deviceLR{}
	o.lr = l // closed with o
	d := o.params[0].Value.Device()
	for range o.parts {
		t := tensor.New(d, tensor.Float32, 1)
		l.ts, l.vals = append(l.ts, t), append(l.vals, math.Float32bits(float32(math.NaN())))
		if err := t.Err(); err != nil {
			o.close()
			return fmt.Errorf("nn: optimizer: learning rate on the device: %w", err)
		}
	}
	if err := l.set(o, lr); err != nil {
		o.close()
		return err
	}
	return nil
}

// set writes lr times each part's scale where it changed. A write is
// ordered after the work recorded before it, and refused while a step is
// captured (set the rate before the step).
func (l *deviceLR) set(o *optimizer, lr float64) error {
	if l == nil || l.ts == nil {
		return nil // the zero Adam, or a closed one: its steps fail on their own
	}
	for i, pt := range o.parts {
		v := float32(lr * pt.lrScale)
		if math.Float32bits(v) == l.vals[i] {
			continue
		}
		if err := l.ts[i].SetFloat32s([]float32{v}); err != nil {
			return fmt.Errorf("nn: optimizer: set the learning rate: %w", err)
		}
		l.vals[i] = math.Float32bits(v)
	}
	return nil
}

func (l *deviceLR) close() {
	for _, t := range l.ts {
		t.Release()
	}
	l.ts, l.vals = nil, nil
}
