package nn

import (
	"fmt"
	"reflect"

	"github.com/vkamp/vkamp/tensor"
)

// Train and evaluation mode, and freezing, over a whole model: Train(m) and
// Eval(m) reach every module nested in m (through Sequential and any module
// with Children), so Dropout is off in evaluation without a type assertion.

// TrainingSetter is a module that behaves differently in training and in
// evaluation, as Dropout.
type TrainingSetter interface {
	SetTraining(training bool)
}

// Parent is a module made of other modules, which Train, Eval, Freeze and
// Unfreeze reach through Children. A model that is a struct of layers
// implements it to have its layers reached.
type Parent interface {
	Children() []Module
}

// Children returns the modules of the sequence.
func (s Sequential) Children() []Module { return s }

// SetTraining turns dropout on (training) or off.
func (m *Dropout) SetTraining(training bool) { m.Training = training }

// Train puts m and every module nested in it in training mode, as
// PyTorch's module.train().
func Train(m Module) { walk(m, func(x Module) { setTraining(x, true) }) }

// Eval puts m and every module nested in it in evaluation mode (dropout
// off), as PyTorch's module.eval().
func Eval(m Module) { walk(m, func(x Module) { setTraining(x, false) }) }

// Freeze marks every parameter of m frozen: no gradient from the next
// graph on, and no optimizer or clipping touches it (see Param.Frozen).
func Freeze(m Module) { setFrozen(m, true) }

// Unfreeze marks every parameter of m trainable again.
func Unfreeze(m Module) { setFrozen(m, false) }

func setFrozen(m Module, frozen bool) {
	for _, p := range m.Parameters() {
		if p != nil {
			p.Frozen = frozen
		}
	}
}

func setTraining(m Module, training bool) {
	if t, ok := m.(TrainingSetter); ok {
		t.SetTraining(training)
	}
}

// walk calls f on m and every module nested in it, parents first; a nil
// module is skipped, and a module met twice (shared) is visited once.
func walk(m Module, f func(Module)) {
	seen := map[moduleKey]bool{}
	var visit func(Module)
	visit = func(m Module) {
		if m == nil {
			return
		}
		if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.IsNil() {
			return
		}
		if key, ok := identity(m); ok {
			if seen[key] {
				return
			}
			seen[key] = true
		}
		f(m)
		if p, ok := m.(Parent); ok {
			for _, c := range p.Children() {
				visit(c)
			}
		}
	}
	visit(m)
}

// moduleKey identifies a module held by reference: a pointer, or a slice
// (a Sequential) by its array and length.
type moduleKey struct {
	typ reflect.Type
	ptr uintptr
	n   int
}

func identity(m Module) (moduleKey, bool) {
	v := reflect.ValueOf(m)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map:
		return moduleKey{v.Type(), v.Pointer(), 0}, !v.IsNil()
	case reflect.Slice:
		return moduleKey{v.Type(), v.Pointer(), v.Len()}, v.Len() > 0
	}
	return moduleKey{}, false
}

// To converts every floating parameter and buffer of m to dt in place, as
// PyTorch's module.to(dtype) (half(), bfloat16()) does, for inference: a
// model whose weights are fp16 or bf16 runs its ops in that dtype without
// autocast, in half the memory. The parameters are frozen and their fp32
// gradients released: the optimizers keep fp32 master weights (AMP's
// recipe), and refuse others. Int32 buffers (BatchNorm's
// num_batches_tracked) stay. A dtype that is not floating panics with a
// *tensor.UsageError; a conversion the device fails is returned, with the
// parameters converted before it left converted.
func To(m Module, dt tensor.DType) error {
	if dt != tensor.Float32 && dt != tensor.Float16 && dt != tensor.BFloat16 {
		panic(&tensor.UsageError{Op: "To", Msg: fmt.Sprintf("dtype %s: want Float32, Float16 or BFloat16", dt)})
	}
	params := map[*Param]bool{}
	for _, p := range m.Parameters() {
		params[p] = true
	}
	for _, p := range State(m) {
		if p == nil || p.Value.DType() == tensor.Int32 {
			continue
		}
		if p.Value.DType() != dt {
			v := tensor.Cast(p.Value, dt)
			if err := v.Err(); err != nil {
				v.Release()
				return fmt.Errorf("nn: To %s: %s: %w", dt, p.Name, err)
			}
			p.Value.Release()
			p.Value = v
		}
		if params[p] {
			p.Frozen = true
			p.Grad.Release()
			p.Grad = nil
		}
	}
	return nil
}
