package nn_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// mnistNet is PyTorch's examples/mnist network for images of side 12
// instead of 28 (fc1 takes 64*4*4 features instead of 9216), to keep the
// test short.
func mnistNet(t *testing.T, d *vk.Device, rng *rand.Rand) (nn.Sequential, []*nn.Dropout) {
	drops := []*nn.Dropout{{P: 0.25, Training: true}, {P: 0.5, Training: true}}
	net := nn.Sequential{
		nn.NewConv2d(d, "conv1", 1, 32, 3, tensor.Conv2dOpts{}, rng), nn.ReLU{},
		nn.NewConv2d(d, "conv2", 32, 64, 3, tensor.Conv2dOpts{}, rng), nn.ReLU{},
		nn.NewMaxPool2d(2, 0), drops[0], nn.Flatten{},
		nn.NewLinear(d, "fc1", 64*4*4, 128, rng), nn.ReLU{}, drops[1],
		nn.NewLinear(d, "fc2", 128, 10, rng),
	}
	t.Cleanup(func() { nn.Close(net) })
	return net, drops
}

// TestConv2dInit: PyTorch's kaiming_uniform(a=sqrt(5)) bound 1/sqrt(fan_in)
// for weight and bias, and shapes [out, in/groups, k, k].
func TestConv2dInit(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	c := nn.NewConv2d(d, "c", 4, 6, 3, tensor.Conv2dOpts{Groups: 2}, rng)
	t.Cleanup(func() { nn.Close(c) })
	if got := c.W.Value.Shape(); len(got) != 4 || got[0] != 6 || got[1] != 2 || got[2] != 3 || got[3] != 3 {
		t.Fatalf("weight shape %v, want [6 2 3 3]", got)
	}
	bound := 1 / math.Sqrt(2*3*3)
	for _, p := range c.Parameters() {
		v := tRead(t, p.Value)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range v {
			lo, hi = min(lo, float64(x)), max(hi, float64(x))
		}
		if lo < -bound || hi > bound || hi-lo < bound/2 && len(v) > 20 {
			t.Errorf("%s in [%g, %g], want within ±%g and spread", p.Name, lo, hi, bound)
		}
	}
	c.B = nil
	if len(c.Parameters()) != 1 {
		t.Error("a Conv2d without bias has a bias parameter")
	}
}

// TestMNISTNet runs the MNIST example's network (on 12x12 images) forward
// and backward at batch 2, in fp32 and under autocast: the output is [2, 10], every
// parameter gets a finite, non-zero fp32 gradient.
func TestMNISTNet(t *testing.T) {
	d := devtest.Open(t)
	for _, autocast := range []bool{false, true} {
		net, _ := mnistNet(t, d, rand.New(rand.NewPCG(3, 4)))
		x := tInput(t, d, tRand(2*12*12, 5, 1, f32), 2, 1, 12, 12)
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16), Seeds: nn.NewSeedSource(1)})
		y := net.Forward(g, g.Input(x))
		if s := y.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 10 {
			t.Fatalf("autocast %v: output %v, want [2 10]", autocast, s)
		}
		loss := g.CrossEntropyLoss(y, tLabels(t, d, 3, 7), nn.Mean)
		if err := g.Backward(loss, nil); err != nil {
			t.Fatal(err)
		}
		for _, p := range net.Parameters() {
			if p.Grad.DType() != tensor.Float32 {
				t.Errorf("autocast %v: %s gradient is %s", autocast, p.Name, p.Grad.DType())
			}
			var norm float64
			for _, v := range tRead(t, p.Grad) {
				norm += float64(v) * float64(v)
			}
			if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
				t.Errorf("autocast %v: %s gradient norm² %g", autocast, p.Name, norm)
			}
		}
		g.Release()
	}
}

func TestConvMisuse(t *testing.T) {
	d := devtest.Open(t)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	x := g.Input(tInput(t, d, make([]float32, 24), 2, 3, 4))
	var se *tensor.ShapeError
	for _, shape := range [][]int{{5, -1}, {-1, -1}, {2, 0, 12}, {25}} {
		func() {
			defer func() {
				if err, ok := recover().(error); !ok || !errors.As(err, &se) || se.Op != "Reshape" {
					t.Errorf("Reshape to %v: want a *tensor.ShapeError for Reshape", shape)
				}
			}()
			g.Reshape(x, shape...)
		}()
	}
	tUsagePanic(t, "Flatten past the last dimension", "Flatten", func() { g.Flatten(x, 3) })
	tUsagePanic(t, "NewConv2d groups", "NewConv2d", func() {
		nn.NewConv2d(d, "c", 3, 4, 3, tensor.Conv2dOpts{Groups: 2}, rand.New(rand.NewPCG(1, 1)))
	})
	w := g.Input(tInput(t, d, make([]float32, 4*2*3*3), 4, 2, 3, 3))
	img := g.Input(tInput(t, d, make([]float32, 3*5*5), 1, 3, 5, 5))
	func() {
		defer func() {
			if err, ok := recover().(error); !ok || !errors.As(err, &se) || se.Op != "Conv2d" {
				t.Errorf("Conv2d with 3 input channels and a 2-channel weight: panic %v, want a *tensor.ShapeError for Conv2d", err)
			}
		}()
		g.Conv2d(img, w, nil, tensor.Conv2dOpts{})
	}()
}
