package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Bit patterns a lossy path would change: signed zeros, subnormals,
// infinities, NaN payloads (quiet and signalling), extremes.
var (
	f32Bits = []uint32{0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x3f800000, 0xbf800000,
		0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00001, 0x7f800001, 0xffc12345}
	f16Bits = []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x3c00, 0xbc00, 0x7bff, 0x7c00, 0xfc00, 0x7e01, 0x7c01, 0xfe00}
)

// fixture returns device tensors holding f32Bits as float32[3 4], f16Bits as
// float16[2 6] and a float32 scalar, and their bytes as a file holds them.
func fixture(t *testing.T, d *vk.Device) ([]Named, [][]byte) {
	t.Helper()
	f32 := make([]float32, len(f32Bits))
	var raw32, raw16 []byte
	for i, b := range f32Bits {
		f32[i] = math.Float32frombits(b)
		raw32 = binary.LittleEndian.AppendUint32(raw32, b)
	}
	f16 := make([]float16.Float16, len(f16Bits))
	for i, b := range f16Bits {
		f16[i] = float16.Frombits(b)
		raw16 = binary.LittleEndian.AppendUint16(raw16, b)
	}
	ts := []Named{
		{"w", tensor.FromFloat32(d, f32, 3, 4)},
		{"h", tensor.FromFloat16(d, f16, 2, 6)},
		{"step", tensor.FromFloat32(d, []float32{7})},
	}
	t.Cleanup(func() {
		for _, n := range ts {
			n.T.Release()
		}
	})
	return ts, [][]byte{raw32, raw16, {0, 0, 0xe0, 0x40}}
}

// deviceBytes reads a tensor back as a file would hold it.
func deviceBytes(t *testing.T, x *tensor.Tensor) []byte {
	t.Helper()
	b, err := x.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSaveRoundTrip(t *testing.T) {
	d := devtest.Open(t)
	ts, raw := fixture(t, d)
	meta := map[string]string{"epoch": "3", "note": "ünï \"côdé\" <&>\n", "": ""}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := Save(path, ts, meta); err != nil {
		t.Fatal(err)
	}

	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(f.Meta, meta) {
		t.Errorf("metadata %q, want %q", f.Meta, meta)
	}
	for i, n := range ts {
		h := f.Tensors[n.Name]
		if h.DType != n.T.DType() || !slices.Equal(h.Shape, n.T.Shape()) || !bytes.Equal(h.Data, raw[i]) {
			t.Errorf("%s: read %s%v % x, want %s%v % x", n.Name, h.DType, h.Shape, h.Data, n.T.DType(), n.T.Shape(), raw[i])
		}
	}

	loaded := []Named{
		{"step", tensor.New(d, tensor.Float32)},
		{"w", tensor.New(d, tensor.Float32, 3, 4)},
		{"h", tensor.New(d, tensor.Float16, 2, 6)},
	}
	if err := Load(path, loaded); err != nil {
		t.Fatal(err)
	}
	for _, n := range loaded {
		i := slices.IndexFunc(ts, func(m Named) bool { return m.Name == n.Name })
		if got := deviceBytes(t, n.T); !bytes.Equal(got, raw[i]) {
			t.Errorf("%s: loaded % x, want % x", n.Name, got, raw[i])
		}
		n.T.Release()
	}

	// Without metadata the header has no __metadata__ key.
	if err := Save(path, ts[:1], nil); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(path); err != nil || f.Meta != nil || len(f.Tensors) != 1 {
		t.Errorf("no metadata: %+v, %v", f, err)
	}
}

// TestSaveBFloat16Int32 saves and loads bf16 (an odd count, so the device
// holds half a padding word) and int32 tensors: the file holds BF16 and I32
// elements bit for bit.
func TestSaveBFloat16Int32(t *testing.T) {
	d := devtest.Open(t)
	bf := []uint16{0x3f80, 0xffc1, 0x0001}
	ints := []int32{math.MinInt32, -1, math.MaxInt32, 7}
	var rawB, rawI []byte
	for _, b := range bf {
		rawB = binary.LittleEndian.AppendUint16(rawB, b)
	}
	for _, i := range ints {
		rawI = binary.LittleEndian.AppendUint32(rawI, uint32(i))
	}
	ts := []Named{{"b", tensor.FromBFloat16(d, bf, 3)}, {"i", tensor.FromInt32(d, ints, 2, 2)}}
	path := filepath.Join(t.TempDir(), "bi.safetensors")
	if err := Save(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Tensors["b"]; h.DType != tensor.BFloat16 || !bytes.Equal(h.Data, rawB) {
		t.Errorf("b: read %s % x, want bfloat16 % x", h.DType, h.Data, rawB)
	}
	if h := f.Tensors["i"]; h.DType != tensor.Int32 || !bytes.Equal(h.Data, rawI) {
		t.Errorf("i: read %s % x, want int32 % x", h.DType, h.Data, rawI)
	}
	loaded := []Named{{"b", tensor.New(d, tensor.BFloat16, 3)}, {"i", tensor.New(d, tensor.Int32, 2, 2)}}
	if err := Load(path, loaded); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{rawB, rawI} {
		if got := deviceBytes(t, loaded[i].T); !bytes.Equal(got, want) {
			t.Errorf("%s: loaded % x, want % x", loaded[i].Name, got, want)
		}
	}
	for _, n := range append(ts, loaded...) {
		n.T.Release()
	}
}

// TestSaveFormat decodes a saved file byte by byte, without this package's
// reader.
func TestSaveFormat(t *testing.T) {
	d := devtest.Open(t)
	ts, raw := fixture(t, d)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := Save(path, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if (8+n)%8 != 0 || 8+n > uint64(len(b)) {
		t.Fatalf("header length %d in a %d-byte file", n, len(b))
	}
	hdr := string(b[8 : 8+n])
	obj := strings.TrimRight(hdr, " ")
	if len(hdr)-len(obj) > 7 || !strings.HasPrefix(obj, "{") || !strings.HasSuffix(obj, "}") {
		t.Errorf("header %q is not a JSON object padded with under 8 spaces", hdr)
	}
	want := `{"__metadata__":{"format":"pt"},` +
		`"w":{"dtype":"F32","shape":[3,4],"data_offsets":[0,48]},` +
		`"h":{"dtype":"F16","shape":[2,6],"data_offsets":[48,72]},` +
		`"step":{"dtype":"F32","shape":[],"data_offsets":[72,76]}}`
	if obj != want {
		t.Errorf("header\n%s\nwant\n%s", obj, want)
	}
	checkJSON(t, obj)
	if data := b[8+n:]; !bytes.Equal(data, slices.Concat(raw...)) {
		t.Errorf("data\n% x\nwant\n% x", data, slices.Concat(raw...))
	}
}

// checkJSON parses the header with encoding/json as another reader would.
func checkJSON(t *testing.T, hdr string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(hdr), &m); err != nil {
		t.Fatal(err)
	}
	var info struct {
		DType   string
		Shape   []int
		Offsets []int `json:"data_offsets"`
	}
	if err := json.Unmarshal(m["h"], &info); err != nil || info.DType != "F16" || !slices.Equal(info.Shape, []int{2, 6}) || !slices.Equal(info.Offsets, []int{48, 72}) {
		t.Errorf("h: %+v, %v", info, err)
	}
}

func TestLoadMismatch(t *testing.T) {
	d := devtest.Open(t)
	ts, _ := fixture(t, d)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := Save(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	failed := failedTensor(t, tensor.Float32)
	// Sentinels: a Load that fails must leave every tensor as it was.
	w := tensor.FromFloat32(d, make([]float32, 12), 4, 3)
	h := tensor.FromFloat32(d, make([]float32, 12), 2, 6)
	extra := tensor.FromFloat32(d, []float32{42}, 1)
	defer func() {
		for _, x := range []*tensor.Tensor{failed, w, h, extra} {
			x.Release()
		}
	}()
	err := Load(path, []Named{{"w", w}, {"h", h}, {"bias", extra}, {"step", failed}, {"w", w}})
	var me *MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("error %v, want a *MismatchError", err)
	}
	want := []string{
		`"w": shape [3 4] in the file, [4 3] in the tensor`,
		`"h": dtype float16 in the file, float32 in the tensor`,
		`missing "bias"`,
		`"step": the tensor carries an error: ` + failed.Err().Error(),
		`"w" given twice`,
	}
	if me.Path != path || !slices.Equal(me.Problems, want) {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(me.Problems, "\n"), strings.Join(want, "\n"))
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "checkpoint: load "+path+": 5 mismatches: ") {
		t.Errorf("message %q", msg)
	}
	for _, x := range []*tensor.Tensor{w, h} {
		if v, err := x.Float32s(); err != nil || slices.ContainsFunc(v, func(f float32) bool { return f != 0 }) {
			t.Errorf("%v written by a failed Load: %v, %v", x, v, err)
		}
	}
	if v, err := extra.Float32s(); err != nil || v[0] != 42 {
		t.Errorf("bias written by a failed Load: %v, %v", v, err)
	}

	// Only extra names.
	err = Load(path, ts[1:2])
	if !errors.As(err, &me) || !slices.Equal(me.Problems, []string{`extra "step" in the file`, `extra "w" in the file`}) {
		t.Errorf("extra names: %v", err)
	}

	// A bf16 tensor loads into a bf16 tensor, not into an fp16 one.
	bf := filepath.Join(dir, "bf16.safetensors")
	if err := os.WriteFile(bf, st(`{"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{0x80, 0x3f}), 0o644); err != nil {
		t.Fatal(err)
	}
	h16 := tensor.FromFloat16(d, []float16.Float16{0}, 1)
	defer h16.Release()
	err = Load(bf, []Named{{"b", h16}})
	if !errors.As(err, &me) || !slices.Equal(me.Problems, []string{`"b": dtype bfloat16 in the file, float16 in the tensor`}) {
		t.Errorf("bf16 into fp16: %v", err)
	}
	b16 := tensor.Zeros(d, tensor.BFloat16, 1)
	defer b16.Release()
	if err := Load(bf, []Named{{"b", b16}}); err != nil {
		t.Errorf("bf16: %v", err)
	} else if v, err := b16.Float32s(); err != nil || v[0] != 1 {
		t.Errorf("bf16 loaded as %v, %v; want [1]", v, err)
	}

	// Errors of Read pass through.
	if err := Load(filepath.Join(dir, "none"), ts); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestLoadTorchFile loads the reference implementation's bytes onto a device.
func TestLoadTorchFile(t *testing.T) {
	d := devtest.Open(t)
	w := tensor.New(d, tensor.Float32, 2, 2)
	b := tensor.New(d, tensor.Float16, 2)
	defer w.Release()
	defer b.Release()
	if err := Load(writeTemp(t, torchFile), []Named{{"bias", b}, {"weight", w}}); err != nil {
		t.Fatal(err)
	}
	if v, err := w.Float32s(); err != nil || !slices.Equal(v, []float32{1, -2, 0.5, math.MaxFloat32}) {
		t.Errorf("weight %v, %v", v, err)
	}
	if v, err := b.Float16s(); err != nil || v[0].Bits() != 0x3c00 || v[1].Bits() != 0x8000 {
		t.Errorf("bias %v, %v", v, err)
	}
}

// TestSaveFailureKeepsOldFile saves over a good file with a tensor whose
// computation failed: the error surfaces mid-write, after the header.
func TestSaveFailureKeepsOldFile(t *testing.T) {
	d := devtest.Open(t)
	ts, _ := fixture(t, d)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := Save(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)

	bad := failedTensor(t, tensor.Float16, 1024)
	defer bad.Release()
	err := Save(path, append(slices.Clone(ts), Named{"bad", bad}), nil)
	if !errors.Is(err, vk.ErrOutOfDeviceMemory) || !strings.Contains(err.Error(), `tensor "bad"`) {
		t.Errorf("error %v, want one wrapping %v", err, vk.ErrOutOfDeviceMemory)
	}
	checkOnly(t, dir, path, old)

	for i, c := range []struct {
		ts   []Named
		meta map[string]string
		want string
	}{
		{[]Named{ts[0], {"w", ts[1].T}}, nil, `name "w" given twice`},
		{[]Named{{"__metadata__", ts[0].T}}, nil, `invalid name "__metadata__"`},
		{[]Named{{"\xff", ts[0].T}}, nil, `invalid name "\xff"`},
		{ts, map[string]string{"k": "\xfe"}, "not valid UTF-8"},
	} {
		if err := Save(path, c.ts, c.meta); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: error %v, want one containing %q", i, err, c.want)
		}
	}
	checkOnly(t, dir, path, old)
}

// failedTensor returns a tensor that carries an error, as one whose memory
// could not be allocated: it is made on a fresh device whose first memory
// allocation fails.
func failedTensor(t *testing.T, dt tensor.DType, shape ...int) *tensor.Tensor {
	t.Helper()
	d := devtest.Open(t)
	d.InjectFaults(vk.Faults{AllocN: 1})
	x := tensor.New(d, dt, shape...)
	d.InjectFaults(vk.Faults{})
	if !errors.Is(x.Err(), vk.ErrOutOfDeviceMemory) {
		t.Fatalf("tensor on a device whose allocation fails: error %v", x.Err())
	}
	return x
}

// checkOnly checks that dir holds only path, with the bytes want.
func checkOnly(t *testing.T, dir, path string, want []byte) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s changed (%v)", path, err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != filepath.Base(path) {
		var all []string
		for _, n := range names {
			all = append(all, n.Name())
		}
		t.Errorf("%s holds %v, want only %s", dir, all, filepath.Base(path))
	}
}

func TestSaveReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop root (TestAtomicReadOnlyDir covers this path as non-root)")
	}
	d := devtest.Open(t)
	ts, _ := fixture(t, d)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := Save(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := Save(path, ts[:1], nil); !errors.Is(err, os.ErrPermission) {
		t.Errorf("error %v, want permission denied", err)
	}
	checkOnly(t, dir, path, old)
}
