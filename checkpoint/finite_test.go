package checkpoint

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestNonFinite counts NaNs and infinities in the bytes of each dtype, by
// bit pattern: quiet and signalling NaNs, both infinities, and the largest
// finite values next to them.
func TestNonFinite(t *testing.T) {
	le16 := func(bs ...uint16) []byte {
		var b []byte
		for _, x := range bs {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
		return b
	}
	le32 := func(bs ...uint32) []byte {
		var b []byte
		for _, x := range bs {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	for i, c := range []struct {
		dt       tensor.DType
		data     []byte
		nan, inf int
	}{
		{tensor.Float32, le32(f32Bits...), 3, 2},
		{tensor.Float32, le32(0x7f7fffff, 0xff7fffff, 0, 0x3f800000), 0, 0},
		{tensor.Float16, le16(f16Bits...), 3, 2},
		{tensor.Float16, le16(0x7bff, 0xfbff, 0x7c00), 0, 1},
		{tensor.BFloat16, le16(0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x7f7f, 0x3f80), 2, 2},
		{tensor.Int32, le32(0x7f800000, 0x7fc00000, 0xffffffff), 0, 0},
		{tensor.Float32, nil, 0, 0},
	} {
		if nan, inf := NonFinite(c.dt, c.data); nan != c.nan || inf != c.inf {
			t.Errorf("%d (%s): %d NaN and %d inf, want %d and %d", i, c.dt, nan, inf, c.nan, c.inf)
		}
	}
}

// TestSaveFinite refuses tensors holding NaN or inf in every float dtype,
// naming the first and counting all, and leaves the old file; without the
// option the same tensors save bit for bit.
func TestSaveFinite(t *testing.T) {
	d := devtest.Open(t)
	ts, _ := fixture(t, d) // w (f32) and h (f16) hold NaN and inf; step is finite
	ok := tensor.FromFloat32(d, []float32{1, 2, math.MaxFloat32}, 3)
	bf := tensor.FromBFloat16(d, []uint16{0x3f80, 0x7f80, 0xffc0}, 3)
	ints := tensor.FromInt32(d, []int32{0x7fc00000, -1}, 2)
	t.Cleanup(func() { ok.Release(); bf.Release(); ints.Release() })

	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if _, err := SaveWith(path, []Named{{"ok", ok}, {"ints", ints}}, nil, SaveOptions{Finite: true}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	for i, c := range []struct {
		ts           []Named
		name         string
		nan, inf, of int
		tensors      int
		msg          string
	}{
		{[]Named{ts[2], {"ok", ok}, ts[0], ts[1]}, "w", 3, 2, 12, 2,
			`checkpoint: save ` + path + `: "w" holds 3 NaN and 2 inf of its 12 values (2 of 4 tensors hold NaN or inf): refused`},
		{[]Named{{"b", bf}, {"ints", ints}}, "b", 1, 1, 3, 1,
			`checkpoint: save ` + path + `: "b" holds 1 NaN and 1 inf of its 3 values (1 of 2 tensors hold NaN or inf): refused`},
		{[]Named{ts[1]}, "h", 3, 2, 12, 1, ""},
	} {
		_, err := SaveWith(path, c.ts, nil, SaveOptions{Finite: true})
		var nf *NonFiniteError
		if !errors.As(err, &nf) {
			t.Errorf("%d: error %v, want a *NonFiniteError", i, err)
			continue
		}
		if nf.Path != path || nf.Name != c.name || nf.NaN != c.nan || nf.Inf != c.inf || nf.Len != c.of || nf.Tensors != c.tensors || nf.Of != len(c.ts) {
			t.Errorf("%d: %+v", i, nf)
		}
		if c.msg != "" && err.Error() != c.msg {
			t.Errorf("%d: message\n%s\nwant\n%s", i, err, c.msg)
		}
		checkOnly(t, dir, path, old)
	}

	// Without the option, non-finite values are data like any other.
	if _, err := SaveWith(path, ts, nil, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Tensors["h"]; !slices.Equal(h.Data, deviceBytes(t, ts[1].T)) {
		t.Errorf("h saved as % x", h.Data)
	}
	// and a load refuses them, naming the first in the file.
	err = f.CheckFinite()
	want := `checkpoint: load ` + path + `: "w" holds 3 NaN and 2 inf of its 12 values (2 of 3 tensors hold NaN or inf): refused`
	if err == nil || err.Error() != want {
		t.Errorf("CheckFinite: %v, want %s", err, want)
	}

}
