package tensor

import (
	"encoding/binary"
	"slices"
)

// Half copies: an Adam step can also write each updated fp32 weight rounded
// to fp16 or bf16 (exactly as Cast rounds it) into a tensor of the caller's,
// so that autocast finds the weights it casts for the next forward already
// cast, with no cast kernel per weight and step. A skipped step writes
// neither the weight nor its copy, so the copy stays the cast of the weight.

// adamHalfLayout is optLayout with a fifth column, the parameter's half
// copy: per chunk, the word offsets of the parameter, its gradient and its
// two moments, then the element count, the copy's first word (two halves a
// word) and 1 if the parameter has a copy.
var adamHalfLayout = tableLayout{
	name:  "optimizer",
	cols:  5,
	entry: 32,
	chunks: func(raw []byte, first [maxTableCols]int64, row []*Tensor) []byte {
		n, chunk := row[0].n, tableChunk(row[0].dev, row[0].n, optChunk)
		has := uint32(0)
		if row[4] != nil {
			has = 1
		}
		for done := 0; done < n; done += chunk {
			for _, off := range first[:4] {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(off+int64(done)))
			}
			raw = binary.LittleEndian.AppendUint32(raw, uint32(min(chunk, n-done)))
			raw = binary.LittleEndian.AppendUint32(raw, uint32(first[4]+int64(done/2)))
			raw = binary.LittleEndian.AppendUint32(raw, has)
			raw = append(raw, make([]byte, 4)...)
		}
		return raw
	},
}

// SetHalfCopy makes half, a live Float16 or BFloat16 tensor of parameter
// i's shape on the state's device, the parameter's half copy: every
// AdamStep from the next on that is not skipped writes the updated value,
// rounded as Cast rounds it, into half. A nil half removes the copy. The
// half copies of one state share one dtype, and none may be a parameter,
// gradient or moment. Only AdamStep writes them: SGDStep and AdadeltaStep
// on a state with a half copy panic. Misuse panics.
func (s *OptimizerState) SetHalfCopy(i int, half *Tensor) {
	const op = "SetHalfCopy"
	if s == nil || s.steps == nil {
		usagePanic(op, "closed or zero OptimizerState")
	}
	if i < 0 || i >= len(s.values) {
		usagePanic(op, "parameter %d of %d", i, len(s.values))
	}
	if half == nil {
		if s.halves != nil {
			s.halves[i] = nil
			if !slices.ContainsFunc(s.halves, func(t *Tensor) bool { return t != nil }) {
				s.halves = nil
			}
		}
		return
	}
	sameDevice(op, s.steps, half)
	if half.dtype != Float16 && half.dtype != BFloat16 {
		panic(&DTypeError{Op: op, Got: half.dtype, Want: "float16 or bfloat16"})
	}
	if !slices.Equal(half.shape, s.values[i].shape) {
		shapePanic(op, half.shape, s.values[i].shape, "half copy and parameter %d differ", i)
	}
	for j, h := range s.halves {
		if h != nil && j != i && h.dtype != half.dtype {
			usagePanic(op, "a %s copy for parameter %d beside parameter %d's %s one: one dtype per state", half.dtype, i, j, h.dtype)
		}
		if h == half && j != i {
			usagePanic(op, "parameter %d's half copy is also parameter %d's", i, j)
		}
	}
	for _, c := range s.cells {
		if c == half {
			usagePanic(op, "the half copy of parameter %d is a parameter, gradient or moment", i)
		}
	}
	if s.halves == nil {
		s.halves = make([]*Tensor, len(s.values))
	}
	s.halves[i], s.halfDT = half, half.dtype
}

// HalfCopy returns parameter i's half copy, nil without one.
func (s *OptimizerState) HalfCopy(i int) *Tensor {
	if s.halves == nil {
		return nil
	}
	return s.halves[i]
}

// halfRows returns the rows of adamHalfLayout of the parameters not frozen.
func (s *OptimizerState) halfRows() []*Tensor {
	cells := make([]*Tensor, 0, 5*len(s.frozen)) // one allocation, not one per growth
	for i, f := range s.frozen {
		if !f {
			cells = append(append(cells, s.cells[4*i:4*i+4]...), s.halves[i])
		}
	}
	return cells
}

// noHalves panics if the state has a half copy, which op would not update.
func (s *OptimizerState) noHalves(op string) {
	if s != nil && s.halves != nil {
		usagePanic(op, "the state has half copies, which only AdamStep writes")
	}
}
