package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// tableOps are the unary ops that look their 16-bit results up (tables.go).
var tableOps = []struct {
	name string
	f    func(x *tensor.Tensor, out tensor.DType) *tensor.Tensor
}{
	{"GELU", tensor.GELU},
	{"GELUTanh", tensor.GELUTanh},
}

// tableGradOps are their backward ops, which look the derivatives up.
var tableGradOps = []struct {
	name string
	f    func(dy, x *tensor.Tensor, out tensor.DType) *tensor.Tensor
}{
	{"GELUBackward", tensor.GELUBackward},
	{"GELUTanhBackward", tensor.GELUTanhBackward},
}

// TestOpTables: where the texel forms serve, a table op of 16-bit dtypes
// gives its kernel's bits for every input value (infinities and subnormals
// among them), in any order, with a partial last block and the padding
// half past an odd count zeroed, and its backward op gives its kernel's
// for every dtype of dy and of the result; NaN gives NaN, whose sign and
// payload may differ: the kernel's own do between a block's elements, as
// x86 keeps the NaN operand that register allocation put first. A table
// is made there alone.
func TestOpTables(t *testing.T) {
	d := devtest.Open(t)
	half := []tensor.DType{tensor.Float16, tensor.BFloat16}
	bits := tableAllBits()
	for _, in := range half {
		x := tableInput(t, d, bits, in)
		raw, err := x.RawBytes()
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-1] = 0x3C // the input's padding half nonzero: still none in the output's
		x.WriteRawBytes(raw)
		for _, out := range half {
			for _, op := range tableOps {
				checkTable(t, d, op.name, op.f, x, out, bits)
			}
		}
		for _, dyt := range opDTypes {
			dy := tableDy(t, d, dyt, len(bits))
			for _, out := range opDTypes {
				for _, op := range tableGradOps {
					checkGradTable(t, d, op.name, op.f, dy, x, out, bits)
				}
			}
			dy.Release()
		}
		x.Release()
	}
}

// TestOpTablesDeterministic: in deterministic mode too, where the backward
// multiplies as det.glsl does, flushing subnormals (one dtype each: its
// kernels take long to build).
func TestOpTablesDeterministic(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	bits := tableAllBits()
	x := tableInput(t, d, bits, tensor.Float16)
	defer x.Release()
	checkTable(t, d, "GELU", tensor.GELU, x, tensor.Float16, bits)
	dy := tableDy(t, d, tensor.BFloat16, len(bits)) // a bf16 dy holds the subnormal
	defer dy.Release()
	checkGradTable(t, d, "GELUBackward", tensor.GELUBackward, dy, x, tensor.Float32, bits)
}

// tableAllBits is every 16-bit value once, shuffled, then 13 of them
// again: the last block has 5.
func tableAllBits() []uint16 {
	bits := make([]uint16, 1<<16, 1<<16+13)
	for i := range bits {
		bits[i] = uint16(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(bits), func(i, j int) { bits[i], bits[j] = bits[j], bits[i] })
	return append(bits, bits[:13]...)
}

// tableDy is a gradient of n elements of dtype dt, -inf, 0, NaN and a
// subnormal among them (the deterministic kernels flush it, and their
// products).
func tableDy(t *testing.T, d *vk.Device, dt tensor.DType, n int) *tensor.Tensor {
	vals := ref.Rand(n, uint64(dt)+7)
	vals[0], vals[1], vals[2], vals[3] = float32(math.Inf(-1)), 0, float32(math.NaN()), 1e-39
	dy, _ := opInput(t, d, vals, dt, n)
	return dy
}

// checkTable compares op(x) with the table and without, and checks the
// table is made where the texel forms serve.
func checkTable(t *testing.T, d *vk.Device, name string, op func(x *tensor.Tensor, out tensor.DType) *tensor.Tensor,
	x *tensor.Tensor, out tensor.DType, bits []uint16) {
	t.Helper()
	y := op(x, out)
	if raw, err := y.RawBytes(); err != nil || len(raw) != 2*len(bits)+2 || raw[len(raw)-2] != 0 || raw[len(raw)-1] != 0 {
		t.Fatalf("%s %s -> %s: the padding half past the odd count is not zero (%d bytes, %v)", name, x.DType(), out, len(raw), err)
	}
	got := tableBits(t, y)
	var want []uint16
	tensor.WithoutTables(func() { want = tableBits(t, op(x, out)) })
	for i := range got {
		if got[i] != want[i] && !(isNaN16(got[i], out) && isNaN16(want[i], out)) {
			t.Fatalf("%s %s -> %s: element %d (input %#04x) is %#04x, the kernel's %#04x", name, x.DType(), out, i, bits[i], got[i], want[i])
		}
	}
	if made, want := tensor.HasTable(d, name, x.DType(), out), tensor.TexelsDevice(d); made != want {
		t.Errorf("%s %s -> %s: a table made %v, want %v", name, x.DType(), out, made, want)
	}
}

// checkGradTable is checkTable for a backward op.
func checkGradTable(t *testing.T, d *vk.Device, name string, op func(dy, x *tensor.Tensor, out tensor.DType) *tensor.Tensor,
	dy, x *tensor.Tensor, out tensor.DType, bits []uint16) {
	t.Helper()
	got := opBits(opRead(t, op(dy, x, out)))
	var want []uint32
	tensor.WithoutTables(func() { want = opBits(opRead(t, op(dy, x, out))) })
	for i := range got {
		if got[i] != want[i] && !(isNaN32(got[i]) && isNaN32(want[i])) {
			t.Fatalf("%s dy %s, x %s -> %s: element %d (x %#04x) is %#08x, the kernel's %#08x", name, dy.DType(), x.DType(), out, i, bits[i], got[i], want[i])
		}
	}
	if made, want := tensor.HasTable(d, name, x.DType(), tensor.Float32), tensor.TexelsDevice(d); made != want {
		t.Errorf("%s x %s: a table made %v, want %v", name, x.DType(), made, want)
	}
}

// TestOpTablesInCapture: a table op first called inside a capture runs its
// kernel there (the graph holds it alone, no upload) and makes the table at
// the next call outside.
func TestOpTablesInCapture(t *testing.T) {
	d2 := devtest.Open(t) // a device of its own: no table made yet
	if !tensor.TexelsDevice(d2) {
		t.Skip("no texel forms, so no tables, on this device")
	}
	vals := []float16.Float16{float16.Fromfloat32(-1), float16.Fromfloat32(0.5), float16.Fromfloat32(3)}
	x := tensor.FromFloat16(d2, vals, 3)
	defer x.Release()
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d2.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := d2.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	y := tensor.GELU(x, tensor.Float16)
	g, err := d2.EndCapture()
	if err != nil {
		t.Fatalf("capture of a GELU before its table: %v", err)
	}
	if n := g.Dispatches(); n != 1 {
		t.Errorf("graph of %d dispatches, want the GELU alone", n)
	}
	g.Close()
	y.Release()
	if tensor.HasTable(d2, "GELU", tensor.Float16, tensor.Float16) {
		t.Error("a table made inside the capture")
	}
	tensor.GELU(x, tensor.Float16).Release()
	if !tensor.HasTable(d2, "GELU", tensor.Float16, tensor.Float16) {
		t.Error("no table made at the call after the capture")
	}
}

// tableInput uploads bits as a tensor of the 16-bit dtype dt.
func tableInput(t *testing.T, d *vk.Device, bits []uint16, dt tensor.DType) *tensor.Tensor {
	t.Helper()
	var x *tensor.Tensor
	if dt == tensor.BFloat16 {
		x = tensor.FromBFloat16(d, bits, len(bits))
	} else {
		x = tensor.FromFloat16(d, float16s(bits), len(bits))
	}
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	return x
}

// tableBits reads and releases x, a 16-bit tensor, as its elements' bits.
func tableBits(t *testing.T, x *tensor.Tensor) []uint16 {
	t.Helper()
	defer x.Release()
	return readBits16(t, x)
}

// isNaN16 reports whether b is a NaN of the 16-bit dtype dt.
func isNaN16(b uint16, dt tensor.DType) bool {
	if dt == tensor.BFloat16 {
		return b&0x7F80 == 0x7F80 && b&0x7F != 0
	}
	return b&0x7C00 == 0x7C00 && b&0x3FF != 0
}

// isNaN32 reports whether b is an fp32 NaN's bits.
func isNaN32(b uint32) bool { return b&0x7F800000 == 0x7F800000 && b&0x7FFFFF != 0 }
