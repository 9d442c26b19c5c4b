package tensor

import "fmt"

// ShapeError is the panic value of an op given tensors whose shapes do not
// fit: a programmer error, like an index out of range.
type ShapeError struct {
	Op   string
	A, B []int // the shapes in conflict
	Msg  string
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("tensor: %s: shape mismatch %v vs %v: %s", e.Op, e.A, e.B, e.Msg)
}

// DTypeError is the panic value of an op given a dtype it cannot take.
type DTypeError struct {
	Op   string
	Got  DType
	Want string
}

func (e *DTypeError) Error() string {
	return fmt.Sprintf("tensor: %s: dtype %s, want %s", e.Op, e.Got, e.Want)
}

// UsageError is the panic value of any other misuse: a nil or released
// tensor, tensors from two devices, a bad axis.
type UsageError struct {
	Op  string
	Msg string
}

func (e *UsageError) Error() string { return fmt.Sprintf("tensor: %s: %s", e.Op, e.Msg) }

func shapePanic(op string, a, b []int, format string, args ...any) {
	panic(&ShapeError{Op: op, A: append([]int(nil), a...), B: append([]int(nil), b...), Msg: fmt.Sprintf(format, args...)})
}

func usagePanic(op string, format string, args ...any) {
	panic(&UsageError{Op: op, Msg: fmt.Sprintf(format, args...)})
}
