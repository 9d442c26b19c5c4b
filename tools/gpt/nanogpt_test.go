package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestNanoGPTWeights: -export writes the trained weights under the names
// of nanoGPT's model.state_dict() (a 2-layer model without biases), and
// -init-from reads them back, as written, converted from fp16, with
// nanoGPT's mask buffers, and refuses what is not this model's: an
// unknown tensor, an untied head, a model of another depth.
func TestNanoGPTWeights(t *testing.T) {
	d := devtest.Open(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "nanogpt.safetensors")
	c := tiny()
	c.iters, c.export = 20, file
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range f.Tensors {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"lm_head.weight", "transformer.ln_f.weight", "transformer.wpe.weight", "transformer.wte.weight"}
	for _, l := range []string{"0", "1"} {
		for _, p := range []string{"attn.c_attn", "attn.c_proj", "ln_1", "ln_2", "mlp.c_fc", "mlp.c_proj"} {
			want = append(want, "transformer.h."+l+"."+p+".weight")
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("exported %v, want nanoGPT's %v", names, want)
	}
	if s := f.Tensors["transformer.h.1.attn.c_attn.weight"].Shape; !slices.Equal(s, []int{96, 32}) {
		t.Errorf("c_attn's weight is %v, want PyTorch's [3*C, C] = [96 32]", s)
	}

	// Loaded back, the weights evaluate as trained (well under the
	// untrained ln 65), from fp32 and from an fp16 copy with mask buffers.
	evalFrom := func(path string) (float64, error) {
		e := tiny()
		e.initFrom, e.evalOnly, e.evalIters = path, true, 4
		e.json = true
		var out strings.Builder
		if err := run(context.Background(), e, &out, io.Discard, io.Discard); err != nil {
			return 0, err
		}
		var e2 map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &e2); err != nil {
			return 0, err
		}
		v, _ := e2["val_loss"].(float64)
		return v, nil
	}
	v32, err := evalFrom(file)
	if err != nil || !(v32 < math.Log(65)-0.5) {
		t.Fatalf("evaluated from the export: val loss %v, %v; want the trained model's", v32, err)
	}
	half := rewrite(t, d, f, filepath.Join(dir, "half.safetensors"), func(name string, h checkpoint.HostTensor) (string, checkpoint.HostTensor, bool) {
		return name, h, true
	}, tensor.Float16, "transformer.h.0.attn.bias", "transformer.h.1.attn.bias")
	if v16, err := evalFrom(half); err != nil || math.Abs(v16-v32) > 0.05 {
		t.Errorf("from fp16 weights with mask buffers: val loss %v (%v), fp32 %v", v16, err, v32)
	}
	for _, bad := range []struct {
		what, want string
		edit       func(string, checkpoint.HostTensor) (string, checkpoint.HostTensor, bool)
		extra      string
	}{
		{"an unknown tensor", "transformer.h.0.attn.extra is not a tensor of this model", nil, "transformer.h.0.attn.extra"},
		{"an untied head", "not tied", func(name string, h checkpoint.HostTensor) (string, checkpoint.HostTensor, bool) {
			if name == "lm_head.weight" {
				h.Data = slices.Clone(h.Data)
				h.Data[0] ^= 1
			}
			return name, h, true
		}, ""},
		{"another depth", "no h.1.attn.c_attn.weight, h.1.attn.c_proj.weight", func(name string, h checkpoint.HostTensor) (string, checkpoint.HostTensor, bool) {
			return name, h, !strings.HasPrefix(name, "transformer.h.1.")
		}, ""},
	} {
		edit := bad.edit
		if edit == nil {
			edit = func(name string, h checkpoint.HostTensor) (string, checkpoint.HostTensor, bool) { return name, h, true }
		}
		var extras []string
		if bad.extra != "" {
			extras = append(extras, bad.extra)
		}
		path := rewrite(t, d, f, filepath.Join(dir, "bad.safetensors"), edit, tensor.Float32, extras...)
		if _, err := evalFrom(path); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one saying %q", bad.what, err, bad.want)
		}
	}
	c = tiny()
	c.initFrom, c.resume, c.checkpoint = file, true, dir
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("-init-from with -resume: %v", err)
	}
}

// rewrite writes f's tensors, as edit keeps and changes them, in dtype dt,
// plus a [1, 1, 16, 16] tensor for each of extras (nanoGPT's mask
// buffers), to path.
func rewrite(t *testing.T, d *vk.Device, f *checkpoint.File, path string,
	edit func(string, checkpoint.HostTensor) (string, checkpoint.HostTensor, bool), dt tensor.DType, extras ...string) string {
	t.Helper()
	var named []checkpoint.Named
	for name, h := range f.Tensors {
		name, h, keep := edit(name, h)
		if !keep {
			continue
		}
		x := tensor.New(d, h.DType, h.Shape...)
		if err := x.SetBytes(h.Data); err != nil {
			t.Fatal(err)
		}
		y := tensor.Cast(x, dt)
		x.Release()
		t.Cleanup(y.Release)
		named = append(named, checkpoint.Named{Name: name, T: y})
	}
	for _, name := range extras {
		m := tensor.Full(d, dt, 1, 1, 1, 16, 16)
		t.Cleanup(m.Release)
		named = append(named, checkpoint.Named{Name: name, T: m})
	}
	if err := checkpoint.Save(path, named, nil); err != nil {
		t.Fatal(err)
	}
	return path
}
