package checkpoint

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/tensor"
)

// torchFile is a safetensors file byte for byte as the reference
// implementation writes save_file({"weight": w, "bias": b},
// metadata={"format": "pt"}) for w = [[1, -2], [0.5, 3.4028235e38]] in
// float32 and b = [1, -0] in float16: metadata first, then tensors sorted
// by dtype (F32 before F16) then name, the header padded with spaces to a
// multiple of 8.
var torchFile = slices.Concat(
	[]byte{0x98, 0, 0, 0, 0, 0, 0, 0}, // 152: 151 bytes of JSON and a space
	[]byte(`{"__metadata__":{"format":"pt"},`+
		`"weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},`+
		`"bias":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}} `),
	[]byte{
		0x00, 0x00, 0x80, 0x3f, // 1
		0x00, 0x00, 0x00, 0xc0, // -2
		0x00, 0x00, 0x00, 0x3f, // 0.5
		0xff, 0xff, 0x7f, 0x7f, // max float32
		0x00, 0x3c, // 1
		0x00, 0x80, // -0
	},
)

// writeTemp writes b to a new file and returns its path.
func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// st builds a file from a header and a data buffer, without padding.
func st(hdr string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	return append(append(b, hdr...), data...)
}

func TestReadTorchFile(t *testing.T) {
	f, err := Read(writeTemp(t, torchFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || len(f.Meta) != 1 || f.Meta["format"] != "pt" {
		t.Fatalf("got %d tensors, metadata %v", len(f.Tensors), f.Meta)
	}
	w, b := f.Tensors["weight"], f.Tensors["bias"]
	if w.DType != tensor.Float32 || !slices.Equal(w.Shape, []int{2, 2}) || !bytes.Equal(w.Data, torchFile[160:176]) {
		t.Errorf("weight: %s%v % x", w.DType, w.Shape, w.Data)
	}
	if b.DType != tensor.Float16 || !slices.Equal(b.Shape, []int{2}) || !bytes.Equal(b.Data, []byte{0, 0x3c, 0, 0x80}) {
		t.Errorf("bias: %s%v % x", b.DType, b.Shape, b.Data)
	}
}

// TestEncodeHeader checks that the writer produces the reference's bytes.
func TestEncodeHeader(t *testing.T) {
	entries := []entry{
		{name: "weight", dtype: tensor.Float32, shape: []int{2, 2}, size: 16},
		{name: "bias", dtype: tensor.Float16, shape: []int{2}, size: 4},
	}
	got := encodeHeader(entries, map[string]string{"format": "pt"})
	if want := torchFile[:160]; !bytes.Equal(got, want) {
		t.Errorf("header\n%q\nwant\n%q", got, want)
	}
	if got := encodeHeader(nil, nil); !bytes.Equal(got, []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      ")) {
		t.Errorf("empty header %q", got)
	}
}

func TestReadValid(t *testing.T) {
	cases := []struct {
		name string
		file []byte
		want map[string]HostTensor
	}{
		{"empty", st(`{}`, nil), map[string]HostTensor{}},
		{"empty metadata", st(`{"__metadata__":{}}`, nil), map[string]HostTensor{}},
		{"null metadata", st(`{"__metadata__":null}`, nil), map[string]HostTensor{}},
		{"scalar", st(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, []byte{1, 2, 3, 4}),
			map[string]HostTensor{"s": {tensor.Float32, []int{}, []byte{1, 2, 3, 4}}}},
		{"zero-size", st(`{"z":{"dtype":"F16","shape":[0,3],"data_offsets":[0,0]}}`, nil),
			map[string]HostTensor{"z": {tensor.Float16, []int{0, 3}, []byte{}}}},
		{"zero-size huge dims", st(`{"z":{"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]}}`, nil),
			map[string]HostTensor{"z": {tensor.Float32, []int{1 << 40, 1 << 40, 0}, []byte{}}}},
		{"bf16", st(`{"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{0x80, 0x3f}),
			map[string]HostTensor{"b": {tensor.BFloat16, []int{1}, []byte{0x80, 0x3f}}}},
		{"offsets out of header order", st(`{"b":{"dtype":"F16","shape":[1],"data_offsets":[4,6]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, []byte{1, 2, 3, 4, 5, 6}),
			map[string]HostTensor{"a": {tensor.Float32, []int{1}, []byte{1, 2, 3, 4}}, "b": {tensor.Float16, []int{1}, []byte{5, 6}}}},
		{"unknown field", st(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2],"note":[1]}}`, []byte{5, 6}),
			map[string]HostTensor{"a": {tensor.Float16, []int{1}, []byte{5, 6}}}},
		{"whitespace", st(" \n{ \"a\" : {\"dtype\":\"F16\",\"shape\":[ 1 ],\"data_offsets\":[0,2]} }\t  ", []byte{5, 6}),
			map[string]HostTensor{"a": {tensor.Float16, []int{1}, []byte{5, 6}}}},
	}
	for i, c := range cases {
		f, err := Read(writeTemp(t, c.file))
		if err != nil {
			t.Errorf("%d %s: %v", i, c.name, err)
			continue
		}
		if len(f.Tensors) != len(c.want) {
			t.Errorf("%d %s: %d tensors, want %d", i, c.name, len(f.Tensors), len(c.want))
		}
		for name, w := range c.want {
			g, ok := f.Tensors[name]
			if !ok || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
				t.Errorf("%d %s: %q is %+v, want %+v", i, c.name, name, g, w)
			}
		}
	}
}

func TestReadCorrupt(t *testing.T) {
	f32x2 := `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	eight := make([]byte, 8)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "file of 0 bytes has no 8-byte header length"},
		{"7 bytes", torchFile[:7], "file of 7 bytes"},
		{"huge length", binary.LittleEndian.AppendUint64(nil, 1<<62), "exceeds 104857600 bytes"},
		{"max length", binary.LittleEndian.AppendUint64(nil, 1<<64-1), "exceeds 104857600 bytes"},
		{"length past the end", append(binary.LittleEndian.AppendUint64(nil, 20), "{}"...), "header length 20 exceeds the 2 bytes after it"},
		{"zero length", st(``, nil), "not a JSON object"},
		{"array", st(`[]`, nil), "not a JSON object"},
		{"string", st(`"a"`, nil), "not a JSON object"},
		{"cut JSON", st(`{"a":{"dtype":"F32",`, nil), `tensor "a"`},
		{"unclosed", st(`{"__metadata__":{}`, nil), "header JSON"},
		{"bad key", st(`{a:1}`, nil), "header JSON"},
		{"two objects", st(`{}{}`, nil), "more after its JSON object"},
		{"garbage after", st(`{}  x`, nil), "more after its JSON object"},
		{"nul padding", st("{}\x00\x00", nil), "more after its JSON object"},
		{"F64", st(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, eight), `tensor "a": dtype "F64" is not F32, F16 or BF16`},
		{"I8", st(`{"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}`, eight), `dtype "I8"`},
		{"lower-case dtype", st(`{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}`, eight), `dtype "f32"`},
		{"no dtype", st(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, eight), `want "dtype", "shape" and "data_offsets"`},
		{"no shape", st(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, eight), `want "dtype"`},
		{"no offsets", st(`{"a":{"dtype":"F32","shape":[2]}}`, eight), `want "dtype"`},
		{"null entry", st(`{"a":null}`, nil), `want "dtype"`},
		{"number entry", st(`{"a":5}`, nil), `tensor "a": json: cannot unmarshal`},
		{"dtype number", st(`{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`, eight), `tensor "a": json: cannot unmarshal`},
		{"negative dim", st(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), "shape [-2] has dimension -2"},
		{"fractional dim", st(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}}`, eight), "cannot unmarshal number 1.5"},
		{"dim beyond int64", st(`{"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}}`, eight), "cannot unmarshal number"},
		{"overflow", st(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, eight), "overflows"},
		{"overflow by size", st(`{"a":{"dtype":"F16","shape":[4611686018427387904,2],"data_offsets":[0,8]}}`, eight), "overflows"},
		{"one offset", st(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, eight), "data_offsets [8], want [begin, end]"},
		{"three offsets", st(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}`, eight), "want [begin, end]"},
		{"reversed offsets", st(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, eight), "are not 0 <= begin <= end"},
		{"negative offset", st(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, eight), "are not 0 <= begin <= end"},
		{"size mismatch", st(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), "hold 8 bytes, but F32[3] needs 12"},
		{"beyond buffer", st(`{"a":`+f32x2+`}`, eight[:4]), "data_offsets [0, 8] beyond the 4-byte buffer"},
		{"overlap", st(`{"a":`+f32x2+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)), `tensors "a" and "b" overlap at byte 4`},
		{"same range", st(`{"a":`+f32x2+`,"b":`+f32x2+`}`, eight), "overlap at byte 0"},
		{"zero-size inside", st(`{"a":`+f32x2+`,"z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}`, eight), `"a" and "z" overlap`},
		{"gap", st(`{"a":`+f32x2+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}}`, make([]byte, 20)), `gap of 4 bytes between "a" and "b"`},
		{"late start", st(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)), `gap of 4 bytes between the start of the buffer and "a"`},
		{"bytes after", st(`{"a":`+f32x2+`}`, make([]byte, 11)), "3 bytes after the last tensor's data"},
		{"data without tensors", st(`{}`, eight), "8 bytes after the last tensor's data"},
		{"duplicate", st(`{"a":`+f32x2+`,"a":`+f32x2+`}`, eight), `duplicate name "a"`},
		{"duplicate metadata", st(`{"__metadata__":{},"__metadata__":{}}`, nil), `duplicate name "__metadata__"`},
		{"metadata number", st(`{"__metadata__":{"epoch":3}}`, nil), "__metadata__ must map strings to strings"},
		{"metadata array", st(`{"__metadata__":[]}`, nil), "__metadata__ must map strings to strings"},
	}
	for i, c := range cases {
		path := writeTemp(t, c.file)
		f, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "checkpoint: read "+path+": ") {
			t.Errorf("%d %s: error %v, want one containing %q", i, c.name, err, c.want)
		}
		if f != nil {
			t.Errorf("%d %s: a file with the error", i, c.name)
		}
	}
}

func TestReadTruncated(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 40, 158, 159, 160, 161, 170, len(torchFile) - 2, len(torchFile) - 1} {
		if _, err := Read(writeTemp(t, torchFile[:n])); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	for _, extra := range [][]byte{{0}, {' '}, make([]byte, 8)} {
		if _, err := Read(writeTemp(t, slices.Concat(torchFile, extra))); err == nil {
			t.Errorf("%d bytes appended: no error", len(extra))
		}
	}
}

// TestReadFlippedLength flips each bit of the header length.
func TestReadFlippedLength(t *testing.T) {
	for bit := range 64 {
		b := slices.Clone(torchFile)
		b[bit/8] ^= 1 << (bit % 8)
		if _, err := Read(writeTemp(t, b)); err == nil {
			t.Errorf("bit %d of the length flipped: no error", bit)
		}
	}
}
