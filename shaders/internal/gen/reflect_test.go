package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// compile builds src the way the generator does (tier-agnostic) and returns the SPIR-V.
func compile(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.comp"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("glslc", glslcArgs(variant{name: "k", src: "k.comp"}, "k.spv")...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("glslc: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "k.spv"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReflect(t *testing.T) {
	needTools(t, "glslc")
	const rw = accRead | accWrite
	cases := []struct {
		name, src string
		want      kernel
	}{{
		name: "spec local size, readonly, writeonly, push",
		src: `#version 450
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
layout(set = 0, binding = 2) buffer C { float c[]; };
layout(push_constant) uniform P { uint n; float s; } p;
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i < p.n) { b[i] = a[i] * p.s; c[i] += 1.0; }
}`,
		want: kernel{bindings: []uint8{accRead, accWrite, rw}, push: 8, local: [3]uint32{1, 1, 1}, specX: true},
	}, {
		name: "spec local size with default",
		src: `#version 450
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(binding = 0) buffer A { float a[]; };
void main() { a[gl_GlobalInvocationID.x] = float(gl_WorkGroupSize.x); }`,
		want: kernel{bindings: []uint8{rw}, local: [3]uint32{64, 1, 1}, specX: true},
	}, {
		name: "fixed local size, no resources",
		src: `#version 450
layout(local_size_x = 16, local_size_y = 8) in;
void main() {}`,
		want: kernel{bindings: []uint8{}, local: [3]uint32{16, 8, 1}},
	}, {
		name: "push layout, member-wise readonly",
		src: `#version 450
layout(local_size_x = 32) in;
layout(binding = 0) buffer A { readonly float x; float y[]; };
layout(binding = 1) readonly buffer B { float z[]; } bb;
layout(push_constant) uniform P { vec3 a; float b; mat4 m; uint c[3]; } p;
void main() { y[0] = x + p.a.x + p.b + p.m[1][2] + float(p.c[2]) + bb.z[1]; }`,
		// a@0(12) b@12 m@16(64) c@80(3*4): 92.
		want: kernel{bindings: []uint8{rw, accRead}, push: 92, local: [3]uint32{32, 1, 1}},
	}, {
		name: "push size rounds up to 4",
		src: `#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(local_size_x = 1) in;
layout(push_constant) uniform P { uint16_t h; } p;
layout(binding = 0) writeonly buffer A { uint a[]; };
void main() { a[0] = uint(p.h); }`,
		want: kernel{bindings: []uint8{accWrite}, push: 4, local: [3]uint32{1, 1, 1}},
	}, {
		name: "a storage buffer aliased: one binding, both views' access",
		src: `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) writeonly buffer B { uvec4 b[]; };
layout(binding = 1) readonly buffer BWords { uint b_words[]; };
void main() { b[0] = a[0] + uvec4(b_words[7]); }`,
		want: kernel{bindings: []uint8{accRead, rw}, local: [3]uint32{1, 1, 1}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := reflectSPV(compile(t, c.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestReflectErrors(t *testing.T) {
	needTools(t, "glslc")
	cases := []struct{ name, src, want string }{{
		name: "gap",
		src: `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { float a[]; };
layout(binding = 2) buffer C { float c[]; };
void main() { a[0] = c[0]; }`,
		want: "binding 1 is missing",
	}, {
		name: "set 1",
		src: `#version 450
layout(local_size_x = 1) in;
layout(set = 1, binding = 0) buffer A { float a[]; };
void main() { a[0] = 1.0; }`,
		want: "descriptor set 1",
	}, {
		name: "ubo",
		src: `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) uniform U { float u; };
layout(binding = 1) buffer A { float a[]; };
void main() { a[0] = u; }`,
		want: "uniform buffer",
	}, {
		name: "spec local size y",
		src: `#version 450
layout(local_size_x = 1, local_size_y_id = 1) in;
layout(binding = 0) buffer A { float a[]; };
void main() { a[0] = 1.0; }`,
		want: "local size y",
	}, {
		name: "texels and a storage buffer on one binding",
		src: `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) uniform usamplerBuffer t;
layout(binding = 0) buffer A { uvec4 a[]; };
void main() { a[0] = texelFetch(t, 0); }`,
		want: "declared twice",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := reflectSPV(compile(t, c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestParseTiers(t *testing.T) {
	cases := []struct {
		src    string
		tiers  []int
		tiered bool
		bad    bool
	}{
		{"#version 450\nvoid main() {}\n", []int{0}, false, false},
		{"#version 450\n// tiers: fp16 packed\n", []int{0, 2}, true, false},
		{"//tiers:storage16\r\n", []int{1}, true, false},
		{"// tiers: packed bf16\n", nil, false, true},
		{"// tiers: packed packed\n", nil, false, true},
		{"// tiers:\n", nil, false, true},
	}
	for _, c := range cases {
		tiers, tiered, err := parseTiers([]byte(c.src))
		if (err != nil) != c.bad || (!c.bad && (!reflect.DeepEqual(tiers, c.tiers) || tiered != c.tiered)) {
			t.Errorf("%q: got %v %v %v", c.src, tiers, tiered, err)
		}
	}
}

// TestRun generates a scratch shaders dir twice: output must be identical,
// stale binaries removed and the tier define visible to the source.
func TestRun(t *testing.T) {
	needTools(t, "glslc", "spirv-val")
	dir := t.TempDir()
	files := map[string]string{
		"scale.comp": `#version 450
// tiers: storage16 packed
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { uint a[]; };
layout(binding = 1) writeonly buffer B { uint b[]; };
layout(push_constant) uniform P { uint n; float s; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) b[i] = a[i] + TIER; }`,
		"fill.comp": `#version 450
#ifdef TIER
#error tier-agnostic kernels get no TIER define
#endif
layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer B { float b[]; };
void main() { b[gl_GlobalInvocationID.x] = 0.0; }`,
		"spv/old.fp16.spv":   "stale",
		"include/dtype.glsl": "#define DT_F32 0u // binary32\n#define DT_I32 3u\n",
	}
	for _, sub := range []string{"spv", "include"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var outs [2][]byte
	cache := t.TempDir() // the second run takes every binary from the first's cache
	for i := range outs {
		if err := run(dir, "launch_gen.go", cache, false); err != nil {
			t.Fatal(err)
		}
		var err error
		if outs[i], err = os.ReadFile(filepath.Join(dir, "kernels_gen.go")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("output differs between runs")
	}
	want := `// Code generated by shaders/internal/gen; DO NOT EDIT.

package shaders

import "github.com/vkamp/vkamp/vk"

var table = []Kernel{
	{Name: "fill", Tier: vk.TierPacked, File: "spv/fill.packed.spv", Bindings: []vk.Access{vk.Write}, PushSize: 0, LocalSize: [3]uint32{64, 1, 1}},
	{Name: "scale", Tier: vk.TierPacked, File: "spv/scale.packed.spv", Bindings: []vk.Access{vk.Read, vk.Write}, PushSize: 8, LocalSize: [3]uint32{1, 1, 1}, SpecLocalSizeX: true},
	{Name: "scale", Tier: vk.TierStorage16, File: "spv/scale.storage16.spv", Bindings: []vk.Access{vk.Read, vk.Write}, PushSize: 8, LocalSize: [3]uint32{1, 1, 1}, SpecLocalSizeX: true},
}
`
	if string(outs[0]) != want {
		t.Errorf("kernels_gen.go:\n%s\nwant:\n%s", outs[0], want)
	}
	launch, err := os.ReadFile(filepath.Join(dir, "launch_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"DTypeI32 DType = 3",
		"type ScaleSpec struct {\n\tLocalSizeX uint32 // LocalSizeX: constant 0, default LocalSize of the device\n}",
		"type P struct {\n\tN uint32  // offset 0\n\tS float32 // offset 4\n}",
		"func Scale(d *vk.Device, groups [3]uint32, s ScaleSpec, p P, b ScaleBind) error",
		"return run(d, k, groups, nil, b.B)", // fill: no push constants
	} {
		if !strings.Contains(string(launch), w) {
			t.Errorf("launchers lack %q:\n%s", w, launch)
		}
	}
	got, _ := filepath.Glob(filepath.Join(dir, "spv", "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if w := []string{"fill.packed.spv", "scale.packed.spv", "scale.storage16.spv"}; !reflect.DeepEqual(got, w) {
		t.Errorf("spv/ holds %v, want %v", got, w)
	}
}
