package kernels

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// SPIR-V opcodes and decorations the freezer rewrites.
const (
	spvOpConstantTrue      = 41
	spvOpConstantFalse     = 42
	spvOpConstant          = 43
	spvOpSpecConstantTrue  = 48
	spvOpSpecConstantFalse = 49
	spvOpSpecConstant      = 50
	spvOpDecorate          = 71
	spvDecorationSpecID    = 1
)

// Freeze returns a copy of a SPIR-V module whose specialization constants
// with an ID in spec (or every one, when all is true) are plain constants:
// the value from spec, else the default. It is what a driver does with
// VkSpecializationInfo, done before the driver's optimizer runs. SwiftShader
// optimizes the module before applying specialization, so its loop unroller
// never sees a loop bounded by a spec constant as having a constant trip
// count: such loops stay loops over arrays in memory, several times slower.
// Derived constants (OpSpecConstantOp) stay as they are; their operands
// become constants.
func Freeze(code []byte, spec map[uint32]uint32, all bool) ([]byte, error) {
	if len(code)%4 != 0 || len(code) < 20 || binary.LittleEndian.Uint32(code) != 0x07230203 {
		return nil, fmt.Errorf("kernels: freeze: not a SPIR-V module")
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	type inst struct{ at, n int }
	var insts []inst
	ids := map[uint32]uint32{} // result id -> SpecId
	for at := 5; at < len(words); {
		n := int(words[at] >> 16)
		if n == 0 || at+n > len(words) {
			return nil, fmt.Errorf("kernels: freeze: malformed instruction at word %d", at)
		}
		insts = append(insts, inst{at, n})
		if op := words[at] & 0xFFFF; op == spvOpDecorate && n == 4 && words[at+2] == spvDecorationSpecID {
			if _, ok := spec[words[at+3]]; ok || all {
				ids[words[at+1]] = words[at+3]
			}
		}
		at += n
	}
	out := append([]uint32(nil), words[:5]...)
	for _, in := range insts {
		w := slices.Clone(words[in.at : in.at+in.n])
		switch op := w[0] & 0xFFFF; {
		case op == spvOpDecorate && in.n == 4 && w[2] == spvDecorationSpecID:
			if _, ok := ids[w[1]]; ok {
				continue // a constant may not carry a SpecId
			}
		case op == spvOpSpecConstantTrue || op == spvOpSpecConstantFalse:
			if id, ok := ids[w[2]]; ok {
				v, set := spec[id]
				val := op == spvOpSpecConstantTrue
				if set {
					val = v != 0
				}
				w[0] = w[0]&^0xFFFF | spvOpConstantFalse
				if val {
					w[0] = w[0]&^0xFFFF | spvOpConstantTrue
				}
			}
		case op == spvOpSpecConstant:
			if id, ok := ids[w[2]]; ok {
				if v, set := spec[id]; set {
					if in.n != 4 {
						return nil, fmt.Errorf("kernels: freeze: spec constant %d is not 32 bits wide", id)
					}
					w[3] = v
				}
				w[0] = w[0]&^0xFFFF | spvOpConstant
			}
		}
		out = append(out, w...)
	}
	b := make([]byte, 4*len(out))
	for i, x := range out {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b, nil
}

// GetFrozen is GetSpec with the specialization constants frozen into the
// module (see Freeze); constant 0 defaults to LocalSize(d) as in GetSpec.
// The pipeline is cached under the op's name and the constants.
func GetFrozen(d *vk.Device, op string, spec map[uint32]uint32) (*vk.Kernel, error) {
	k, ok := shaders.Lookup(op, shaders.Tier(d.Tier()))
	if !ok {
		return nil, fmt.Errorf("kernels: no variant of %q for tier %s", op, d.Tier())
	}
	all := map[uint32]uint32{}
	if k.SpecLocalSizeX {
		all[0] = LocalSize(d)
	}
	for id, v := range spec {
		all[id] = v
	}
	code, err := Freeze(k.Code(), all, true)
	if err != nil {
		return nil, fmt.Errorf("kernels: %s: %w", op, err)
	}
	src := vk.KernelSource{Name: op + "." + k.Tier.String() + "." + specKey(all), SPIRV: code, PushSize: k.PushSize}
	for _, a := range k.Bindings {
		src.Bindings = append(src.Bindings, vk.Access(a))
	}
	return d.Kernel(src)
}

// specKey names a set of constants, sorted by ID: "0=64,1=8".
func specKey(spec map[uint32]uint32) string {
	ids := make([]int, 0, len(spec))
	for id := range spec {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("%d=%d", id, spec[uint32(id)])
	}
	return strings.Join(s, ",")
}
