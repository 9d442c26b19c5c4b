package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Tests of the NV-to-KHR cooperative-matrix pass and of checkKHR, its
// structural check: Debian 12's spirv-val cannot validate the KHR output.

const coopHeader = `#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) buffer O { float o[]; };
#define F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
`

// khrTypes returns the cooperative-matrix types of a KHR module as
// "component-width/use" strings, in module order.
func khrTypes(t *testing.T, b []byte) []string {
	t.Helper()
	_, insts, err := decodeSPV(b)
	if err != nil {
		t.Fatal(err)
	}
	m := &khrModule{defs: map[uint32]spvInst{}}
	var out []string
	for _, in := range insts {
		if isTypeDecl(in.op) {
			m.defs[in.w[0]] = in
		} else if in.op >= opConstantTrue && in.op <= opSpecConstantOp {
			m.defs[in.w[1]] = in
		}
		if in.op == opTypeCoopKHR {
			use, _ := m.constVal(in.w[5])
			out = append(out, map[uint32]string{16: "f16", 32: "f32"}[m.defs[in.w[1]].w[1]]+"/"+useNames[use])
		}
	}
	return out
}

func count(t *testing.T, b []byte, op uint32) int {
	t.Helper()
	_, insts, err := decodeSPV(b)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range insts {
		if in.op == op {
			n++
		}
	}
	return n
}

func TestCoopToKHR(t *testing.T) {
	needTools(t, "glslc", "spirv-val")
	cases := []struct {
		name, body string
		types      []string // cooperative-matrix types of the result
		err        string   // or the pass's error
	}{{
		name:  "A and B from one buffer, row- and column-major",
		body:  coopSimpleMain,
		types: []string{"f16/A", "f16/B", "f32/accumulator"},
	}, {
		name: "arrays of fragments in loops, accumulators carried by phis",
		body: `layout(constant_id = 1) const uint FM = 2;
void main() {
	F16 fa[FM], fb[2];
	F32 c[FM * 2];
	for (uint i = 0; i < FM * 2; i++) c[i] = F32(0.0);
	for (uint k = 0; k < 4; k++) {
		for (uint i = 0; i < FM; i++) coopMatLoadNV(fa[i], a, k * 32 + i * 64, 2, false);
		for (uint j = 0; j < 2; j++) {
			if (k % 2 == 0) coopMatLoadNV(fb[j], a, j * 32, 2, true); else coopMatLoadNV(fb[j], a, j * 32, 2, false);
		}
		for (uint i = 0; i < FM; i++) for (uint j = 0; j < 2; j++) c[i * 2 + j] = coopMatMulAddNV(fa[i], fb[j], c[i * 2 + j]);
	}
	for (uint i = 0; i < FM * 2; i++) coopMatStoreNV(c[i], o, i * 256, 16, false);
}`,
		types: []string{"f16/A", "f16/B", "f32/accumulator"},
	}, {
		name:  "only an accumulator",
		body:  `void main() { F32 c; coopMatLoadNV(c, o, 0, 16, false); coopMatStoreNV(c, o, 256, 16, true); }`,
		types: []string{"f32/accumulator"},
	}, {
		name: "one variable as A and B",
		body: `void main() {
	F16 x;
	coopMatLoadNV(x, a, 0, 2, false);
	F32 c = coopMatMulAddNV(x, x, F32(0.0));
	coopMatStoreNV(c, o, 0, 16, false);
}`,
		err: "distinct variables",
	}, {
		name: "A and B through one variable",
		body: `void main() {
	F16 x, y;
	coopMatLoadNV(x, a, 0, 2, false);
	y = x;
	F32 c = coopMatMulAddNV(x, y, F32(0.0));
	coopMatStoreNV(c, o, 0, 16, false);
}`,
		err: "distinct variables",
	}, {
		name: "layout from a specialization constant",
		body: `layout(constant_id = 1) const bool COL = false;
void main() {
	F16 x, y;
	coopMatLoadNV(x, a, 0, 2, COL);
	coopMatLoadNV(y, a, 64, 2, false);
	F32 c = coopMatMulAddNV(x, y, F32(0.0));
	coopMatStoreNV(c, o, 0, 16, false);
}`,
		err: "not a literal true or false",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nv := compile(t, coopHeader+c.body)
			if !hasCoopNV(nv) {
				t.Fatal("glslc output has no CooperativeMatrixNV capability")
			}
			khr, err := coopToKHR(nv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := checkKHR(khr); err != nil {
				t.Fatal(err)
			}
			got := khrTypes(t, khr)
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(c.types, " ") {
				t.Errorf("types %v, want %v", got, c.types)
			}
			for _, op := range []uint32{opCoopLoadNV, opCoopStoreNV, opCoopMulAddNV} {
				if n, m := count(t, nv, op), count(t, khr, op-opCoopLoadNV+opCoopLoadKHR); n != m {
					t.Errorf("%d NV instructions of opcode %d, %d KHR ones", n, op, m)
				}
			}
			// The pass keeps what reflection sees.
			k1, err1 := reflectSPV(nv)
			k2, err2 := reflectSPV(khr)
			if err1 != nil || err2 != nil || k1.push != k2.push || !bytes.Equal(k1.bindings, k2.bindings) || k1.local != k2.local {
				t.Errorf("reflection differs: %+v %v, %+v %v", k1, err1, k2, err2)
			}
			again, err := coopToKHR(khr)
			if err != nil || !bytes.Equal(again, khr) {
				t.Errorf("a KHR module is not left alone: %v", err)
			}
		})
	}
}

// TestCoopToKHRPlain checks that modules without cooperative matrices pass
// through unchanged.
func TestCoopToKHRPlain(t *testing.T) {
	needTools(t, "glslc")
	b := compile(t, `#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { float a[]; };
void main() { a[0] = 1.0; }`)
	out, err := coopToKHR(b)
	if err != nil || !bytes.Equal(out, b) {
		t.Fatalf("changed a plain module: %v", err)
	}
}

// mutate returns the module with f applied to its instructions.
func mutate(t *testing.T, b []byte, f func([]spvInst) []spvInst) []byte {
	t.Helper()
	hdr, insts, err := decodeSPV(b)
	if err != nil {
		t.Fatal(err)
	}
	return encodeSPV(hdr, f(insts))
}

// coopSimpleMain loads A and B from one buffer, row- and column-major, and
// stores one product: the smallest module with all three uses.
const coopSimpleMain = `void main() {
	F16 x, y;
	coopMatLoadNV(x, a, 0, 2, false);
	coopMatLoadNV(y, a, 64, 2, true);
	F32 c = F32(0.0);
	c = coopMatMulAddNV(x, y, c);
	coopMatStoreNV(c, o, 0, 16, false);
}`

// TestCheckKHR breaks a good KHR module in the ways a faulty pass could and
// expects checkKHR to notice each.
func TestCheckKHR(t *testing.T) {
	needTools(t, "glslc")
	good, err := coopToKHR(compile(t, coopHeader+coopSimpleMain))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkKHR(good); err != nil {
		t.Fatal(err)
	}
	first := func(insts []spvInst, op uint32) *spvInst {
		for i := range insts {
			if insts[i].op == op {
				return &insts[i]
			}
		}
		t.Fatalf("no opcode %d", op)
		return nil
	}
	cases := []struct {
		name string
		f    func([]spvInst) []spvInst
		want string
	}{
		{"A and B swapped", func(in []spvInst) []spvInst {
			m := first(in, opCoopMulAddKHR)
			m.w[2], m.w[3] = m.w[3], m.w[2]
			return in
		}, "uses"},
		{"bad layout", func(in []spvInst) []spvInst {
			first(in, opCoopLoadKHR).w[3] = first(in, opTypeCoopKHR).w[3] // rows: 16
			return in
		}, "layout"},
		{"no stride", func(in []spvInst) []spvInst {
			s := first(in, opCoopStoreKHR)
			s.w = s.w[:3]
			return in
		}, "stride"},
		{"load typed as the other operand", func(in []spvInst) []spvInst {
			var types []uint32
			for _, x := range in {
				if x.op == opTypeCoopKHR {
					types = append(types, x.w[0])
				}
			}
			first(in, opCoopLoadKHR).w[0] = types[1] // the B type, stored into an A variable
			return in
		}, "type"},
		{"twin types", func(in []spvInst) []spvInst {
			var out []spvInst
			for _, x := range in {
				if x.op == opTypeCoopKHR && len(out) > 0 && out[len(out)-1].op == opTypeCoopKHR {
					x.w = append([]uint32(nil), x.w...)
					x.w[5] = out[len(out)-1].w[5] // same use as the type before
				}
				out = append(out, x)
			}
			return out
		}, "same"},
		{"NV capability left", func(in []spvInst) []spvInst {
			for i := range in {
				if in[i].op == opCapability && in[i].w[0] == capCoopKHR {
					in[i].w = []uint32{capCoopNV}
				}
			}
			return in
		}, "CooperativeMatrixNV"},
		{"no memory model", func(in []spvInst) []spvInst {
			first(in, opMemoryModel).w[1] = 1 // GLSL450
			return in
		}, "memory model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := mutate(t, append([]byte(nil), good...), c.f)
			if err := checkKHR(bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestCoopCommitted checks the committed cooperative-matrix binaries: they
// pass checkKHR, hold an A, a B and an accumulator type, and are what the
// pass makes of the current source.
func TestCoopCommitted(t *testing.T) {
	dir := filepath.Join("..", "..")
	spvs, err := filepath.Glob(filepath.Join(dir, "spv", "*.spv"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range spvs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if count(t, b, opTypeCoopKHR) == 0 && !hasCoopNV(b) {
			continue
		}
		found++
		name := filepath.Base(p)
		if err := checkKHR(b); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := strings.Join(khrTypes(t, b), " "); got != "f16/A f16/B f32/accumulator" {
			t.Errorf("%s: cooperative-matrix types %s", name, got)
		}
		if count(t, b, opCoopMulAddKHR) == 0 || count(t, b, opCoopLoadKHR) == 0 || count(t, b, opCoopStoreKHR) == 0 {
			t.Errorf("%s: no loads, stores or MulAdds", name)
		}
		// Regenerate from the source, as the generator does.
		parts := strings.Split(strings.TrimSuffix(name, ".spv"), ".")
		if len(parts) != 2 || indexOf(tierNames, parts[1]) < 0 {
			t.Fatalf("%s: unexpected name", name)
		}
		if _, err := exec.LookPath("glslc"); err != nil {
			continue
		}
		v := variant{name: parts[0], src: parts[0] + ".comp", tier: indexOf(tierNames, parts[1]), tiered: true}
		tmp := t.TempDir()
		cmd := exec.Command("glslc", glslcArgs(v, filepath.Join(tmp, "k.spv"))...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("glslc: %v\n%s", err, out)
		}
		nv, err := os.ReadFile(filepath.Join(tmp, "k.spv"))
		if err != nil {
			t.Fatal(err)
		}
		khr, err := coopToKHR(nv)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(khr, b) {
			t.Errorf("%s is stale: run go generate ./shaders", name)
		}
	}
	if found == 0 {
		t.Error("no cooperative-matrix kernel among the committed binaries")
	}
}
