package data

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
)

// Source is a dataset of numbered samples: each an input of XShape
// elements (float32, or int32 token ids) and a target of YShape int32s.
type Source interface {
	Len() int
	Shapes() (x, y []int)
	XDType() tensor.DType // Float32 or Int32
	// Fill writes the samples idx, in order, as little-endian 4-byte
	// elements: inputs into x, targets into y.
	Fill(idx []int, x, y []byte)
}

// Slices is a Source over host slices: sample i's input is
// X[i*prod(XShape):], its target Y[i*prod(YShape):].
type Slices struct {
	X              []float32
	Y              []int32
	XShape, YShape []int
}

// NewSlices returns a Source over x and y, whose samples have the given
// shapes ([] for a scalar target); sizes that do not match are an error.
func NewSlices(x []float32, y []int32, xShape, yShape []int) (*Slices, error) {
	xn, yn := prod(xShape), prod(yShape)
	if xn < 1 || yn < 1 || len(x)%xn != 0 || len(y)%yn != 0 || len(x)/xn != len(y)/yn {
		return nil, fmt.Errorf("data: %d inputs of shape %v and %d targets of shape %v do not make whole samples, as many of each", len(x), xShape, len(y), yShape)
	}
	return &Slices{X: x, Y: y, XShape: xShape, YShape: yShape}, nil
}

func (s *Slices) Len() int             { return len(s.Y) / prod(s.YShape) }
func (s *Slices) Shapes() (x, y []int) { return s.XShape, s.YShape }
func (s *Slices) XDType() tensor.DType { return tensor.Float32 }
func (s *Slices) Fill(idx []int, x, y []byte) {
	xn, yn := prod(s.XShape), prod(s.YShape)
	for j, i := range idx {
		putF32(x[4*j*xn:], s.X[i*xn:(i+1)*xn])
		putI32(y[4*j*yn:], s.Y[i*yn:(i+1)*yn])
	}
}

// MNIST is a Source over an MNIST set (read from IDX files by
// mnist.Load): images as float32 in [0, 1] of the given shape (empty: one
// row of Rows*Cols pixels, as an MLP takes them; [1, 28, 28] for a CNN),
// labels as scalars.
func MNIST(s *mnist.Set, shape ...int) (Source, error) {
	px := s.Rows * s.Cols
	if len(shape) == 0 {
		shape = []int{px}
	}
	if prod(shape) != px {
		return nil, fmt.Errorf("data: an MNIST image has %d pixels, not shape %v", px, shape)
	}
	return &mnistSource{s: s, shape: shape}, nil
}

type mnistSource struct {
	s     *mnist.Set
	shape []int
}

func (m *mnistSource) Len() int             { return m.s.N }
func (m *mnistSource) Shapes() (x, y []int) { return m.shape, nil }
func (m *mnistSource) XDType() tensor.DType { return tensor.Float32 }
func (m *mnistSource) Fill(idx []int, x, y []byte) {
	px := m.s.Rows * m.s.Cols
	for j, i := range idx {
		putF32(x[4*j*px:], m.s.Images[i*px:(i+1)*px])
		binary.LittleEndian.PutUint32(y[4*j:], uint32(m.s.Labels[i]))
	}
}

// Tokens is a Source over a token stream, as nanoGPT's get_batch reads
// one: sample i is the Block tokens from position i, its target the
// Block tokens from i+1.
type Tokens struct {
	Data  []int32
	Block int
}

func (t *Tokens) Len() int             { return max(0, len(t.Data)-t.Block) }
func (t *Tokens) Shapes() (x, y []int) { return []int{t.Block}, []int{t.Block} }
func (t *Tokens) XDType() tensor.DType { return tensor.Int32 }
func (t *Tokens) Fill(idx []int, x, y []byte) {
	for j, i := range idx {
		putI32(x[4*j*t.Block:], t.Data[i:i+t.Block])
		putI32(y[4*j*t.Block:], t.Data[i+1:i+1+t.Block])
	}
}

func prod(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func putF32(b []byte, v []float32) {
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
}

func putI32(b []byte, v []int32) {
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(f))
	}
}
