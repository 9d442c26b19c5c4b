package checkpoint

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the seed corpus under testdata/fuzz")

// FuzzRead checks that parse never panics, and that what it accepts writes
// back to a file that parses to the same tensors.
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		file, err := parse(bytes.NewReader(in), int64(len(in)))
		if err != nil {
			return
		}
		out := reencode(file)
		again, err := parse(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatalf("re-encoded file: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) || len(again.Meta) != len(file.Meta) {
			t.Fatalf("%d tensors and %d metadata became %d and %d", len(file.Tensors), len(file.Meta), len(again.Tensors), len(again.Meta))
		}
		for k, v := range file.Meta {
			if again.Meta[k] != v {
				t.Fatalf("metadata %q: %q became %q", k, v, again.Meta[k])
			}
		}
		for name, a := range file.Tensors {
			b := again.Tensors[name]
			if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("%q: %+v became %+v", name, a, b)
			}
		}
	})
}

// reencode writes a parsed file back, its tensors in order of name.
func reencode(f *File) []byte {
	names := slices.Sorted(maps.Keys(f.Tensors))
	entries := make([]entry, len(names))
	var data bytes.Buffer
	for i, name := range names {
		h := f.Tensors[name]
		entries[i] = entry{name: name, dtype: h.DType, shape: h.Shape, size: int64(len(h.Data))}
		data.Write(h.Data)
	}
	return append(encodeHeader(entries, f.Meta), data.Bytes()...)
}

// seeds is the committed corpus: the reference's bytes and a few near misses.
func seeds() map[string][]byte {
	f32 := `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	return map[string][]byte{
		"torch":     torchFile,
		"empty":     st(`{}`, nil),
		"zero_size": st(`{"z":{"dtype":"F16","shape":[0,3],"data_offsets":[0,0]},"s":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}}`, []byte{1, 2}),
		"duplicate": st(`{"a":`+f32+`,"a":`+f32+`}`, make([]byte, 8)),
		"overlap":   st(`{"a":`+f32+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
		"truncated": torchFile[:170],
	}
}

// TestSeedCorpus checks the committed seeds, or rewrites them with -update.
func TestSeedCorpus(t *testing.T) {
	for name, in := range seeds() {
		path := filepath.Join("testdata", "fuzz", "FuzzRead", name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale (%v): run go test -run TestSeedCorpus -update", path, err)
		}
	}
}
