package checkpoint

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestLoadWith saves a file as a PyTorch fine-tuning source would hold it
// (an fp16 body, an fp32 head, a name the model lacks, a "_orig_mod."
// prefix) and loads it into a model of fp32 body and a bf16 head plus a new
// layer: strictly it is a *MismatchError listing each difference and
// writes nothing; non-strict, converting and renaming, it loads what is
// shared (fp16 to fp32 exactly, fp32 to bf16 rounded as tensor.Cast
// rounds) and reports the missing and unexpected names.
func TestLoadWith(t *testing.T) {
	d := devtest.Open(t)
	path := filepath.Join(t.TempDir(), "ft.safetensors")
	body := []float32{1, -2.5, 1e-3, 65504, float32(math.Copysign(0, -1)), 3.140625}
	head := []float32{1.00390625, math.Pi, -1e30, 7}
	b16 := tensor.Cast(tensor.FromFloat32(d, body, 2, 3), tensor.Float16)
	h32 := tensor.FromFloat32(d, head, 4)
	old := tensor.FromFloat32(d, []float32{9}, 1)
	for _, x := range []*tensor.Tensor{b16, h32, old} {
		defer x.Release()
	}
	if err := Save(path, []Named{{"_orig_mod.body", b16}, {"_orig_mod.head", h32}, {"_orig_mod.old_head", old}}, nil); err != nil {
		t.Fatal(err)
	}

	bodyT := tensor.Zeros(d, tensor.Float32, 2, 3)
	headT := tensor.Zeros(d, tensor.BFloat16, 4)
	newT := tensor.FromFloat32(d, []float32{5, 5}, 2)
	for _, x := range []*tensor.Tensor{bodyT, headT, newT} {
		defer x.Release()
	}
	ts := []Named{{"body", bodyT}, {"head", headT}, {"new_head", newT}}
	prefix := func(n string) string { return "_orig_mod." + n }

	_, err := LoadWith(path, ts, LoadOptions{Rename: prefix})
	var me *MismatchError
	if !errors.As(err, &me) || len(me.Problems) != 4 {
		t.Fatalf("strict load: %v, want a *MismatchError with 4 problems (2 dtypes, a missing name, an extra one)", err)
	}
	for _, want := range []string{`"_orig_mod.body": dtype float16`, `"_orig_mod.head": dtype float32`, `missing "_orig_mod.new_head"`, `extra "_orig_mod.old_head"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("strict load: %v lacks %s", err, want)
		}
	}
	if got := readF32(t, bodyT); !slices.Equal(got, make([]float32, 6)) {
		t.Errorf("a refused load wrote %v", got)
	}
	if _, err := LoadWith(path, ts, LoadOptions{Rename: prefix, NonStrict: true}); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("non-strict without Convert: %v, want the dtypes named", err)
	}

	res, err := LoadWith(path, ts, LoadOptions{Rename: prefix, NonStrict: true, Convert: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Missing, []string{"new_head"}) || !slices.Equal(res.Unexpected, []string{"_orig_mod.old_head"}) {
		t.Errorf("missing %q, unexpected %q; want [new_head], [_orig_mod.old_head]", res.Missing, res.Unexpected)
	}
	wantBody := readF32(t, tensor.Cast(b16, tensor.Float32))
	if got := readF32(t, bodyT); !slices.Equal(got, wantBody) {
		t.Errorf("fp16 body loaded into fp32: %v, want %v", got, wantBody)
	}
	wantHead := readF32(t, tensor.Cast(tensor.Cast(h32, tensor.BFloat16), tensor.Float32))
	if got := readF32(t, tensor.Cast(headT, tensor.Float32)); !slices.Equal(got, wantHead) {
		t.Errorf("fp32 head loaded into bf16: %v, want %v", got, wantHead)
	}
	if got := readF32(t, newT); !slices.Equal(got, []float32{5, 5}) {
		t.Errorf("the missing tensor was written: %v", got)
	}

	// A shape that differs is an error even non-strict, and two tensors
	// renamed to one name are too.
	wrong := tensor.Zeros(d, tensor.Float32, 3, 2)
	defer wrong.Release()
	if _, err := LoadWith(path, []Named{{"body", wrong}}, LoadOptions{Rename: prefix, NonStrict: true, Convert: true}); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("another shape: %v", err)
	}
	same := func(string) string { return "_orig_mod.head" }
	if _, err := LoadWith(path, []Named{{"a", headT}, {"b", headT}}, LoadOptions{Rename: same, NonStrict: true, Convert: true}); err == nil || !strings.Contains(err.Error(), "both name") {
		t.Errorf("two tensors renamed to one name: %v", err)
	}
}

func readF32(t *testing.T, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
