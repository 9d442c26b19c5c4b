package reliability_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// outcome is what a bad input must lead to: nothing, an error, or a panic
// with one of tensor's typed values.
type outcome int

const (
	succeeds   outcome = iota // no error, no panic
	fails                     // an error (matching row.is when set)
	shapePanic                // a *tensor.ShapeError naming the op and both shapes
	dtypePanic                // a *tensor.DTypeError naming the op and the dtype
	usagePanic                // a *tensor.UsageError naming the op
)

var outcomeNames = [...]string{"succeeds", "error", "ShapeError panic", "DTypeError panic", "UsageError panic"}

func (o outcome) String() string { return outcomeNames[o] }

type badInput struct {
	name string
	want outcome
	is   error    // for fails: the error errors.Is must match; nil for any
	msg  []string // substrings the panic or error message must hold
	run  func(e *env) error
}

// env is what the rows work with: the device under test, a second device,
// a closed one, and fixtures. Tensors made by a row go into scope and are
// released after it.
type env struct {
	t                *testing.T
	d, other, closed *vk.Device
	onClosed         *tensor.Tensor // made on closed before it was closed
	scope            tensor.Scope
	model            *nn.Linear // the model the checkpoint rows load into
	opt              *nn.SGD
	ckpt             string // a valid checkpoint of another Linear(8, 4)
}

func (e *env) keep(t *tensor.Tensor) *tensor.Tensor { return e.scope.Track(t) }

// z returns a tracked fp32 tensor of zeros on the device under test.
func (e *env) z(shape ...int) *tensor.Tensor {
	return e.keep(tensor.Zeros(e.d, tensor.Float32, shape...))
}

// readErr returns the error that reading t gives.
func readErr(t *tensor.Tensor) error {
	_, err := t.Float32s()
	return err
}

// TestBadInputs feeds bad input to the public API, one row each, and checks
// the outcome: a typed panic for misuse, an error for what depends on the
// device, the data or a file. After every row the process is alive, no
// device buffer leaked, and the device still computes correctly.
func TestBadInputs(t *testing.T) {
	e := setupEnv(t)
	rows := badInputs()
	counts := map[outcome]int{}
	for i, r := range rows {
		counts[r.want]++
		t.Run(fmt.Sprintf("%02d_%s", i, r.name), func(t *testing.T) {
			live := e.d.Stats().LiveBuffers
			t.Cleanup(func() { // after the row's own cleanups
				e.scope.Release()
				if got := e.d.Stats().LiveBuffers; got != live {
					t.Errorf("row %d (%s): %d live buffers after the row, %d before: a leak", i, r.name, got, live)
				}
				deviceWorks(t, e.d)
				deviceWorks(t, e.other)
			})
			e.t = t
			p, err := call(func() error { return r.run(e) })
			check(t, i, r, p, err)
		})
	}
	t.Logf("%d bad-input rows: %d succeed harmlessly, %d return errors, %d panic with ShapeError, %d with DTypeError, %d with UsageError",
		len(rows), counts[succeeds], counts[fails], counts[shapePanic], counts[dtypePanic], counts[usagePanic])
	if len(rows) < 40 {
		t.Errorf("%d rows, want at least 40", len(rows))
	}
}

// call runs f, turning a panic into its value.
func call(f func() error) (p any, err error) {
	defer func() { p = recover() }()
	return nil, f()
}

func check(t *testing.T, i int, r badInput, p any, err error) {
	t.Helper()
	var msg string
	switch v := p.(type) {
	case nil:
		if err != nil {
			msg = err.Error()
		}
	case *tensor.ShapeError:
		msg = v.Error()
		if r.want == shapePanic {
			for _, want := range []string{v.Op, fmt.Sprint(v.A), fmt.Sprint(v.B)} {
				if !strings.Contains(msg, want) {
					t.Errorf("row %d (%s): ShapeError %q does not name %q", i, r.name, msg, want)
				}
			}
		}
	case *tensor.DTypeError:
		msg = v.Error()
		if r.want == dtypePanic && (!strings.Contains(msg, v.Op) || !strings.Contains(msg, v.Got.String())) {
			t.Errorf("row %d (%s): DTypeError %q does not name the op and the dtype", i, r.name, msg)
		}
	case *tensor.UsageError:
		msg = v.Error()
		if r.want == usagePanic && (v.Op == "" || !strings.Contains(msg, v.Op)) {
			t.Errorf("row %d (%s): UsageError %q does not name the op", i, r.name, msg)
		}
	default:
		t.Fatalf("row %d (%s): panic with an untyped value %T: %v", i, r.name, p, p)
	}
	got := succeeds
	switch p.(type) {
	case *tensor.ShapeError:
		got = shapePanic
	case *tensor.DTypeError:
		got = dtypePanic
	case *tensor.UsageError:
		got = usagePanic
	default:
		if err != nil {
			got = fails
		}
	}
	if got != r.want {
		t.Fatalf("row %d (%s): %v (%s), want %v", i, r.name, got, msg, r.want)
	}
	if r.want == fails && r.is != nil && !errors.Is(err, r.is) {
		t.Errorf("row %d (%s): error %q does not match %v", i, r.name, err, r.is)
	}
	for _, s := range r.msg {
		if !strings.Contains(msg, s) {
			t.Errorf("row %d (%s): %q does not say %q", i, r.name, msg, s)
		}
	}
	t.Logf("row %d: %v: %s", i, got, msg)
}

func badInputs() []badInput {
	nan, inf := math.NaN(), math.Inf(1)
	newSGD := func(e *env, o nn.SGDOptions) error {
		opt, err := nn.NewSGD(e.model.Parameters(), o)
		if err == nil {
			opt.Close()
		}
		return err
	}
	newAdam := func(e *env, o nn.AdamOptions) error {
		opt, err := nn.NewAdam(e.model.Parameters(), o)
		if err == nil {
			opt.Close()
		}
		return err
	}
	newScaler := func(o scaler.Options) error {
		sc, err := scaler.New(o)
		if err == nil {
			sc.Close()
		}
		return err
	}
	stateDict := `{"scale": 1024, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 3}`
	pixels := make([]byte, 2*3*3)
	return []badInput{
		// Shape and dtype mismatches.
		{"Add shapes", shapePanic, nil, []string{"Add", "[2 3]", "[3 2]"}, func(e *env) error {
			e.keep(tensor.Add(e.z(2, 3), e.z(3, 2), tensor.Float32))
			return nil
		}},
		{"Sub lengths", shapePanic, nil, []string{"Sub", "[4]", "[5]"}, func(e *env) error {
			e.keep(tensor.Sub(e.z(4), e.z(5), tensor.Float32))
			return nil
		}},
		{"Mul ranks", shapePanic, nil, []string{"Mul", "[2 2]", "[4]"}, func(e *env) error {
			e.keep(tensor.Mul(e.z(2, 2), e.z(4), tensor.Float16))
			return nil
		}},
		{"AddBias length", shapePanic, nil, []string{"AddBias", "[2 3]", "[2]"}, func(e *env) error {
			e.keep(tensor.AddBias(e.z(2, 3), e.z(2), tensor.Float32))
			return nil
		}},
		{"MatMul inner dimensions", shapePanic, nil, []string{"MatMul", "[2 3]", "[4 5]"}, func(e *env) error {
			e.keep(tensor.MatMul(e.z(2, 3), e.z(4, 5), tensor.MatMulOpts{}))
			return nil
		}},
		{"Reshape length", shapePanic, nil, []string{"Reshape", "[2 3]", "[4 2]"}, func(e *env) error {
			e.keep(tensor.Reshape(e.z(2, 3), 4, 2))
			return nil
		}},
		{"FromFloat32 data length", shapePanic, nil, []string{"FromFloat32", "[2 3]", "[5]"}, func(e *env) error {
			e.keep(tensor.FromFloat32(e.d, make([]float32, 5), 2, 3))
			return nil
		}},
		{"Item of a vector", shapePanic, nil, []string{"Item", "[2]", "[1]"}, func(e *env) error {
			_, err := e.z(2).Item()
			return err
		}},
		{"AxpyUnless shapes", shapePanic, nil, []string{"AxpyUnless", "[3]", "[4]"}, func(e *env) error {
			return tensor.AxpyUnless(1, e.z(3), e.z(4), e.z(1))
		}},
		{"MSELoss shapes", shapePanic, nil, []string{"MSELoss", "[2 4]", "[2 3]"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.MSELoss(g.Input(e.z(2, 4)), g.Input(e.z(2, 3)), nn.Mean)
			return nil
		}},
		{"CrossEntropyLoss labels", shapePanic, nil, []string{"CrossEntropyLoss", "[2 4]", "[3]"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.CrossEntropyLoss(g.Input(e.z(2, 4)), e.z(3), nn.Mean)
			return nil
		}},
		{"Linear input width", shapePanic, nil, []string{"MatMul", "[2 5]", "[4 8]"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{Autocast: tensor.Float16})
			defer g.Release()
			e.model.Forward(g, g.Input(e.z(2, 5)))
			return nil
		}},
		{"Backward of a vector loss", shapePanic, nil, []string{"Backward", "[4]", "[1]"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			y := g.ReLU(g.Param(e.model.B))
			return g.Backward(y, nil)
		}},
		{"Float16s of a float32 tensor", dtypePanic, nil, []string{"Float16s", "float32"}, func(e *env) error {
			_, err := e.z(2).Float16s()
			return err
		}},
		{"New of an unknown dtype", dtypePanic, nil, []string{"New", "DType(7)"}, func(e *env) error {
			e.keep(tensor.New(e.d, tensor.DType(7), 2))
			return nil
		}},
		{"Cast to an unknown dtype", dtypePanic, nil, []string{"Cast", "DType(9)"}, func(e *env) error {
			e.keep(tensor.Cast(e.z(2), tensor.DType(9)))
			return nil
		}},
		{"Add into int32", dtypePanic, nil, []string{"Add", "int32"}, func(e *env) error {
			e.keep(tensor.Add(e.z(2), e.z(2), tensor.Int32))
			return nil
		}},
		{"AxpyUnless fp16", dtypePanic, nil, []string{"AxpyUnless", "float16"}, func(e *env) error {
			return tensor.AxpyUnless(1, e.keep(tensor.Zeros(e.d, tensor.Float16, 3)), e.z(3), e.z(1))
		}},
		{"CrossEntropyLoss fp16 labels", dtypePanic, nil, []string{"CrossEntropyLoss", "float16"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.CrossEntropyLoss(g.Input(e.z(2, 4)), e.keep(tensor.Zeros(e.d, tensor.Float16, 2)), nn.Mean)
			return nil
		}},
		{"CrossEntropyLoss float32 labels", dtypePanic, nil, []string{"CrossEntropyLoss", "float32", "int32 class indices"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.CrossEntropyLoss(g.Input(e.z(2, 4)), e.z(2), nn.Mean)
			return nil
		}},
		{"CrossEntropyLoss label C", fails, tensor.ErrBadTarget, []string{"NLL: device-side assert: row 1 has target 4, outside the classes [0, 4)"}, func(e *env) error {
			return badTarget(e, 0, 4)
		}},
		{"CrossEntropyLoss label -1", fails, tensor.ErrBadTarget, []string{"NLL: device-side assert: row 0 has target -1, outside the classes [0, 4)"}, func(e *env) error {
			return badTarget(e, -1, 3)
		}},
		{"Embedding index V", fails, tensor.ErrBadIndex, []string{"Embedding: device-side assert: row 2 has index 5, outside [0, 5)"}, func(e *env) error {
			return badIndex(e, 0, 4, 5)
		}},
		{"Embedding index -1", fails, tensor.ErrBadIndex, []string{"Embedding: device-side assert: row 0 has index -1, outside [0, 5)"}, func(e *env) error {
			return badIndex(e, -1, 1)
		}},

		// Nil and released tensors.
		{"Add nil", usagePanic, nil, []string{"Add", "nil tensor"}, func(e *env) error {
			e.keep(tensor.Add(nil, e.z(2), tensor.Float32))
			return nil
		}},
		{"Sum nil", usagePanic, nil, []string{"Sum", "nil tensor"}, func(e *env) error {
			e.keep(tensor.Sum(nil))
			return nil
		}},
		{"Add released", usagePanic, nil, []string{"Add", "released"}, func(e *env) error {
			a := e.z(2)
			a.Release()
			e.keep(tensor.Add(a, e.z(2), tensor.Float32))
			return nil
		}},
		{"read released", usagePanic, nil, []string{"Float32s", "released"}, func(e *env) error {
			a := e.z(2)
			a.Release()
			return readErr(a)
		}},
		{"Release twice", succeeds, nil, nil, func(e *env) error {
			a := tensor.Zeros(e.d, tensor.Float32, 2)
			a.Release()
			a.Release()
			return nil
		}},
		{"Graph input nil", usagePanic, nil, []string{"Input"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.Input(nil)
			return nil
		}},
		{"scale a nil loss", usagePanic, nil, []string{"nil tensor"}, func(e *env) error {
			sc, err := scaler.New(scaler.Options{})
			if err != nil {
				return err
			}
			defer sc.Close()
			e.keep(sc.Scale(nil))
			return nil
		}},
		{"seed from a nil loss", usagePanic, nil, []string{"nil tensor"}, func(e *env) error {
			sc, err := scaler.New(scaler.Options{})
			if err != nil {
				return err
			}
			defer sc.Close()
			e.keep(sc.Seed(nil))
			return nil
		}},
		{"scale a released loss", fails, nil, nil, func(e *env) error {
			sc, err := scaler.New(scaler.Options{})
			if err != nil {
				return err
			}
			defer sc.Close()
			loss := e.z(1)
			loss.Release()
			return readErr(e.keep(sc.Scale(loss)))
		}},
		{"buffer read after Free", fails, vk.ErrInvalidArgument, []string{"freed"}, func(e *env) error {
			b, err := e.d.Alloc(16)
			if err != nil {
				return err
			}
			b.Free()
			b.Free()
			return b.Read(0, make([]byte, 4))
		}},

		// Another device, a closed device.
		{"Add across devices", usagePanic, nil, []string{"Add", "different devices"}, func(e *env) error {
			e.keep(tensor.Add(e.z(2), e.keep(tensor.Zeros(e.other, tensor.Float32, 2)), tensor.Float32))
			return nil
		}},
		{"Graph input from another device", usagePanic, nil, []string{"Input", "another device"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.Input(e.keep(tensor.Zeros(e.other, tensor.Float32, 2)))
			return nil
		}},
		{"optimizer over two devices", fails, nil, []string{"another device"}, func(e *env) error {
			p := nn.NewParam(e.other, "other", []float32{1, 2}, 2)
			defer p.Close()
			opt, err := nn.NewSGD(append(e.model.Parameters(), p), nn.SGDOptions{LR: 0.1, Momentum: 0.9})
			if err == nil {
				opt.Close()
			}
			return err
		}},
		{"scaler across devices", fails, nil, []string{"another device"}, func(e *env) error {
			sc, err := scaler.New(scaler.Options{})
			if err != nil {
				return err
			}
			defer sc.Close()
			e.keep(sc.Scale(e.z(1)))
			p := nn.NewParam(e.other, "other", []float32{1, 2}, 2)
			defer p.Close()
			_, err = sc.Step(&fakeOpt{grads: []*tensor.Tensor{p.Grad}})
			return err
		}},
		{"read a tensor of a closed device", fails, vk.ErrClosed, nil, func(e *env) error {
			return readErr(e.onClosed)
		}},
		{"op on a closed device", fails, vk.ErrClosed, nil, func(e *env) error {
			return readErr(e.keep(tensor.Scale(e.onClosed, 2, tensor.Float32)))
		}},
		{"New on a closed device", fails, vk.ErrClosed, nil, func(e *env) error {
			return readErr(e.keep(tensor.New(e.closed, tensor.Float32, 4)))
		}},
		{"optimizer on a closed device", fails, vk.ErrClosed, nil, func(e *env) error {
			// Not Grad: e.onClosed, which one tensor as both is misuse.
			p := &nn.Param{Name: "p", Value: e.onClosed, Grad: e.keep(tensor.Scale(e.onClosed, 0, tensor.Float32))}
			opt, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{LR: 0.1})
			if err == nil {
				opt.Close()
			}
			return err
		}},
		{"Alloc on a closed device", fails, vk.ErrClosed, nil, func(e *env) error {
			_, err := e.closed.Alloc(64)
			return err
		}},
		{"Close twice", succeeds, nil, nil, func(e *env) error {
			return e.closed.Close()
		}},

		// Zero and negative sizes.
		{"New with a zero dimension", usagePanic, nil, []string{"New", "[3 0]"}, func(e *env) error {
			e.keep(tensor.New(e.d, tensor.Float32, 3, 0))
			return nil
		}},
		{"Zeros with a negative dimension", usagePanic, nil, []string{"New", "[-2]"}, func(e *env) error {
			e.keep(tensor.Zeros(e.d, tensor.Float32, -2))
			return nil
		}},
		{"FromFloat32 empty", usagePanic, nil, []string{"FromFloat32", "[0]"}, func(e *env) error {
			e.keep(tensor.FromFloat32(e.d, nil, 0))
			return nil
		}},
		{"Linear with no inputs", usagePanic, nil, []string{"NewLinear", `"empty"`, "in 0, out 4"}, func(e *env) error {
			nn.NewLinear(e.d, "empty", 0, 4, rand.New(rand.NewPCG(1, 1)))
			return nil
		}},
		{"SumAxis out of range", usagePanic, nil, []string{"SumAxis", "axis 2"}, func(e *env) error {
			e.keep(tensor.SumAxis(e.z(2, 3), 2))
			return nil
		}},
		{"Alloc 0 bytes", fails, vk.ErrInvalidArgument, nil, func(e *env) error {
			_, err := e.d.Alloc(0)
			return err
		}},
		{"Alloc -8 bytes", fails, vk.ErrInvalidArgument, nil, func(e *env) error {
			_, err := e.d.Alloc(-8)
			return err
		}},
		{"buffer read at a negative offset", fails, vk.ErrInvalidArgument, nil, func(e *env) error {
			b, err := e.d.Alloc(16)
			if err != nil {
				return err
			}
			defer b.Free()
			return b.Read(-4, make([]byte, 4))
		}},
		{"buffer write past the end", fails, vk.ErrInvalidArgument, nil, func(e *env) error {
			b, err := e.d.Alloc(16)
			if err != nil {
				return err
			}
			defer b.Free()
			return b.Write(8, make([]byte, 16))
		}},

		// Sizes above the device's limits.
		{"Alloc over maxMemoryAllocationSize", fails, vk.ErrOutOfDeviceMemory, nil, func(e *env) error {
			_, err := e.d.Alloc(int64(e.d.Info().MaxMemoryAllocationSize) + 1)
			return err
		}},
		{"tensor over the allocation limit", fails, vk.ErrOutOfDeviceMemory, nil, func(e *env) error {
			n := int(min(e.d.Info().MaxMemoryAllocationSize/4+1, math.MaxInt32))
			return readErr(e.keep(tensor.New(e.d, tensor.Float32, n, 2)))
		}},
		{"tensor over 2^31 elements", usagePanic, nil, []string{"New", "2^31"}, func(e *env) error {
			e.keep(tensor.New(e.d, tensor.Float32, 1<<16, 1<<16))
			return nil
		}},
		{"binding over maxStorageBufferRange", fails, vk.ErrInvalidArgument, nil, func(e *env) error {
			info := e.d.Info()
			if uint64(info.MaxStorageBufferRange) >= info.MaxMemoryAllocationSize {
				// The allocation limit comes first on this device.
				_, err := e.d.Alloc(int64(info.MaxMemoryAllocationSize) + 1)
				if errors.Is(err, vk.ErrOutOfDeviceMemory) {
					return fmt.Errorf("%w (the allocation limit comes first)", vk.ErrInvalidArgument)
				}
				return err
			}
			x := e.keep(tensor.New(e.d, tensor.Float32, int(info.MaxStorageBufferRange/4)+64))
			return readErr(e.keep(tensor.Scale(x, 2, tensor.Float32)))
		}},

		// NaN and infinite hyperparameters.
		{"scaler InitScale NaN", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{InitScale: nan})
		}},
		{"scaler InitScale -1", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{InitScale: -1})
		}},
		{"scaler GrowthFactor +Inf", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{GrowthFactor: inf})
		}},
		{"scaler BackoffFactor NaN", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{BackoffFactor: nan})
		}},
		{"scaler MinScale -Inf", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{MinScale: -inf})
		}},
		{"scaler MaxScale NaN", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{MaxScale: nan})
		}},
		{"scaler GrowthInterval -5", fails, scaler.ErrOptions, nil, func(e *env) error {
			return newScaler(scaler.Options{GrowthInterval: -5})
		}},
		{"SGD lr NaN", fails, nil, []string{"lr"}, func(e *env) error {
			return newSGD(e, nn.SGDOptions{LR: nan})
		}},
		{"SGD momentum +Inf", fails, nil, []string{"momentum"}, func(e *env) error {
			return newSGD(e, nn.SGDOptions{LR: 0.1, Momentum: inf})
		}},
		{"SGD weight decay NaN", fails, nil, []string{"weight decay"}, func(e *env) error {
			return newSGD(e, nn.SGDOptions{LR: 0.1, WeightDecay: nan})
		}},
		{"Adam lr +Inf", fails, nil, []string{"lr"}, func(e *env) error {
			return newAdam(e, nn.AdamOptions{LR: inf})
		}},
		{"Adam beta1 NaN", fails, nil, []string{"beta1"}, func(e *env) error {
			return newAdam(e, nn.AdamOptions{LR: 1e-3, Beta1: nan})
		}},
		{"Adam eps -Inf", fails, nil, []string{"eps"}, func(e *env) error {
			return newAdam(e, nn.AdamOptions{LR: 1e-3, Eps: -inf})
		}},
		{"SGD SetLR NaN", fails, nil, []string{"lr"}, func(e *env) error {
			err := e.opt.SetLR(nan)
			if e.opt.LR() != 0.1 {
				e.t.Errorf("SetLR(NaN) changed the learning rate to %g", e.opt.LR())
			}
			return err
		}},
		{"Adam SetLR -Inf", fails, nil, []string{"lr"}, func(e *env) error {
			opt, err := nn.NewAdam(e.model.Parameters(), nn.AdamOptions{LR: 1e-3})
			if err != nil {
				return err
			}
			defer opt.Close()
			err = opt.SetLR(-inf)
			if opt.LR() != 1e-3 {
				e.t.Errorf("SetLR(-Inf) changed the learning rate to %g", opt.LR())
			}
			return err
		}},
		{"scaler UpdateTo NaN", fails, scaler.ErrOptions, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				return m.sc.UpdateTo(nan)
			})
		}},
		{"scaler SetGrowthFactor +Inf", fails, scaler.ErrOptions, nil, func(e *env) error {
			sc, _ := scaler.New(scaler.Options{})
			defer sc.Close()
			return sc.SetGrowthFactor(inf)
		}},
		{"Dropout probability NaN", usagePanic, nil, []string{"Dropout"}, func(e *env) error {
			g := nn.NewGraph(e.d, nn.Options{})
			defer g.Release()
			g.Dropout(g.Input(e.z(4)), float32(nan))
			return nil
		}},

		// Scaler misuse sequences.
		{"Unscale before Scale", fails, scaler.ErrNotScaled, nil, func(e *env) error {
			return e.misuse(func(m *tiny, _ func()) error { return m.sc.Unscale(m.opt) })
		}},
		{"Step before Scale", fails, scaler.ErrNotScaled, nil, func(e *env) error {
			return e.misuse(func(m *tiny, _ func()) error { _, err := m.sc.Step(m.opt); return err })
		}},
		{"Update before Scale", fails, scaler.ErrNotScaled, nil, func(e *env) error {
			return e.misuse(func(m *tiny, _ func()) error { return m.sc.Update() })
		}},
		{"Unscale twice", fails, scaler.ErrUnscaledTwice, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				if err := m.sc.Unscale(m.opt); err != nil {
					return fmt.Errorf("first Unscale: %v", err)
				}
				return m.sc.Unscale(m.opt)
			})
		}},
		{"Step twice", fails, scaler.ErrSteppedTwice, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				if _, err := m.sc.Step(m.opt); err != nil {
					return fmt.Errorf("first Step: %v", err)
				}
				_, err := m.sc.Step(m.opt)
				return err
			})
		}},
		{"Unscale after Step", fails, scaler.ErrAfterStep, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				if _, err := m.sc.Step(m.opt); err != nil {
					return fmt.Errorf("Step: %v", err)
				}
				return m.sc.Unscale(m.opt)
			})
		}},
		{"Update without a Step", fails, scaler.ErrNoInfChecks, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				return m.sc.Update()
			})
		}},
		{"Step an optimizer with no gradients", fails, scaler.ErrNoInfChecks, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				_, err := m.sc.Step(&fakeOpt{})
				return err
			})
		}},
		{"Unscale fp16 gradients", fails, scaler.ErrFP16Gradients, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				return m.sc.Unscale(&fakeOpt{grads: []*tensor.Tensor{e.keep(tensor.Zeros(e.d, tensor.Float16, 4))}})
			})
		}},
		{"Step an optimizer passed by value", fails, nil, []string{"pointer"}, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				backward()
				_, err := m.sc.Step(valueOpt{grads: []*tensor.Tensor{e.z(4)}})
				return err
			})
		}},
		{"Skipped read 8 steps late", fails, scaler.ErrStale, nil, func(e *env) error {
			return e.misuse(func(m *tiny, backward func()) error {
				var first scaler.Skipped
				for i := range 9 {
					backward()
					s, err := m.sc.Step(m.opt)
					if err != nil {
						return err
					}
					if i == 0 {
						first = s
					}
					if err := m.sc.Update(); err != nil {
						return err
					}
				}
				_, err := first.Value()
				return err
			})
		}},

		// Corrupt checkpoints.
		{"checkpoint: none", fails, nn.ErrNoCheckpoint, nil, func(e *env) error {
			_, err := nn.LoadCheckpoint(e.t.TempDir(), e.model.Parameters(), e.opt)
			return err
		}},
		{"checkpoint: LATEST garbage", fails, nil, []string{"LATEST"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "LATEST"), []byte("\x00\xffgarbage"), 0o644)
			})
		}},
		{"checkpoint: LATEST names a missing version", fails, os.ErrNotExist, nil, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-9\n"), 0o644)
			})
		}},
		{"checkpoint: model truncated to half", fails, nil, []string{"model.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				fi, err := os.Stat(filepath.Join(dir, "step-1", "model.safetensors"))
				if err != nil {
					return err
				}
				return truncate(filepath.Join(dir, "step-1", "model.safetensors"), fi.Size()/2)
			})
		}},
		{"checkpoint: model missing its last byte", fails, nil, []string{"model.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return truncate(filepath.Join(dir, "step-1", "model.safetensors"), -1)
			})
		}},
		{"checkpoint: model empty", fails, nil, []string{"model.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return truncate(filepath.Join(dir, "step-1", "model.safetensors"), 0)
			})
		}},
		{"checkpoint: model header length 2^62", fails, nil, []string{"model.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				path := filepath.Join(dir, "step-1", "model.safetensors")
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				binary.LittleEndian.PutUint64(raw, 1<<62)
				return os.WriteFile(path, raw, 0o644)
			})
		}},
		{"checkpoint: model header bytes flipped", fails, nil, []string{"model.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				path := filepath.Join(dir, "step-1", "model.safetensors")
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for i := 8; i < 40 && i < len(raw); i += 3 {
					raw[i] ^= 0x5a
				}
				return os.WriteFile(path, raw, 0o644)
			})
		}},
		{"checkpoint: optimizer truncated", fails, nil, []string{"optimizer-0.safetensors"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return truncate(filepath.Join(dir, "step-1", "optimizer-0.safetensors"), -5)
			})
		}},
		{"checkpoint: state.json truncated", fails, nil, []string{"state.json"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return truncate(filepath.Join(dir, "step-1", "state.json"), -10)
			})
		}},
		{"checkpoint: negative learning rate", fails, nil, []string{"lr"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return editState(dir, func(m map[string]any) { optimizer0(m)["settings"].(map[string]any)["LR"] = -1 })
			})
		}},
		{"checkpoint: negative step count", fails, nil, []string{"steps"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				return editState(dir, func(m map[string]any) { optimizer0(m)["steps"] = -5 })
			})
		}},
		{"checkpoint: of another model", fails, nil, []string{"shape"}, func(e *env) error {
			return e.loadCorrupt(func(dir string) error {
				other := nn.NewLinear(e.d, "fc", 8, 5, rand.New(rand.NewPCG(1, 1)))
				defer nn.Close(other)
				opt, err := nn.NewSGD(other.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9})
				if err != nil {
					return err
				}
				defer opt.Close()
				return nn.SaveCheckpoint(dir, other.Parameters(), nil, opt)
			})
		}},

		// Scaler state dicts.
		{"state dict empty", fails, scaler.ErrBadState, nil, func(e *env) error { return e.loadScalerState("") }},
		{"state dict {}", fails, scaler.ErrBadState, nil, func(e *env) error { return e.loadScalerState("{}") }},
		{"state dict truncated", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(stateDict[:len(stateDict)/2])
		}},
		{"state dict with trailing garbage", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(stateDict + `, "scale": -1}`)
		}},
		{"state dict missing scale", fails, scaler.ErrBadState, []string{"scale"}, func(e *env) error {
			return e.loadScalerState(strings.Replace(stateDict, `"scale": 1024,`, "", 1))
		}},
		{"state dict scale -1", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(strings.Replace(stateDict, "1024", "-1", 1))
		}},
		{"state dict scale 1e999", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(strings.Replace(stateDict, "1024", "1e999", 1))
		}},
		{"state dict growth interval 2.5", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(strings.Replace(stateDict, "2000", "2.5", 1))
		}},
		{"state dict tracker as a string", fails, scaler.ErrBadState, nil, func(e *env) error {
			return e.loadScalerState(strings.Replace(stateDict, `"_growth_tracker": 3`, `"_growth_tracker": "3"`, 1))
		}},

		// IDX files.
		{"IDX images empty", fails, io.ErrUnexpectedEOF, nil, func(e *env) error { return readImages(nil) }},
		{"IDX images header truncated", fails, io.ErrUnexpectedEOF, nil, func(e *env) error {
			return readImages(idx(0x803, []uint32{2, 3}, nil))
		}},
		{"IDX images data truncated", fails, nil, []string{"truncated data"}, func(e *env) error {
			return readImages(idx(0x803, []uint32{2, 3, 3}, pixels[:7]))
		}},
		{"IDX images trailing bytes", fails, nil, []string{"trailing"}, func(e *env) error {
			return readImages(idx(0x803, []uint32{2, 3, 3}, append(pixels, 0)))
		}},
		{"IDX images byte-swapped magic", fails, nil, []string{"byte-swapped"}, func(e *env) error {
			return readImages(idx(0x03080000, []uint32{2 << 24, 3 << 24, 3 << 24}, pixels))
		}},
		{"IDX images wrong magic", fails, nil, []string{"not an IDX file"}, func(e *env) error {
			return readImages(idx(0x504b0304, []uint32{2, 3, 3}, pixels))
		}},
		{"IDX labels given as images", fails, nil, []string{"dimensions"}, func(e *env) error {
			return readImages(idx(0x801, []uint32{2}, []byte{1, 2}))
		}},
		{"IDX images of 4 GiB each", fails, nil, []string{"more than"}, func(e *env) error {
			return readImages(idx(0x803, []uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}, nil))
		}},
		{"IDX images 0x0 pixels", fails, nil, []string{"empty"}, func(e *env) error {
			return readImages(idx(0x803, []uint32{2, 0, 3}, nil))
		}},
		{"IDX labels byte-swapped magic", fails, nil, []string{"byte-swapped"}, func(e *env) error {
			return readLabels(idx(0x01080000, []uint32{2 << 24}, []byte{1, 2}))
		}},
		{"IDX labels wrong magic", fails, nil, []string{"not an IDX file"}, func(e *env) error {
			return readLabels([]byte("%PDF-1.4 not labels"))
		}},
		{"IDX labels element type float", fails, nil, []string{"element type"}, func(e *env) error {
			return readLabels(idx(0x0d01, []uint32{2}, []byte{1, 2}))
		}},
		{"IDX label 10", fails, nil, []string{"want 0 to 9"}, func(e *env) error {
			return readLabels(idx(0x801, []uint32{3}, []byte{1, 10, 2}))
		}},
		{"IDX labels truncated", fails, nil, []string{"truncated data"}, func(e *env) error {
			return readLabels(idx(0x801, []uint32{3}, []byte{1}))
		}},
	}
}
