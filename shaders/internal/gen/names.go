package main

// Names for the typed launchers. glslc -O strips OpName, so the generator
// compiles each variant a second time without optimization and reads the
// names of its specialization constants, push-constant members and
// bindings here; ids, offsets and types come from the same SPIR-V, and the
// shipped (optimized) binary is checked against them.

import (
	"fmt"
	"sort"
	"strings"
)

const opTypeBool = 20 // the other opcodes are in reflect.go

// DeterministicID is the id of shaders/include/det.glsl's DETERMINISTIC,
// and DriverHalvesID that of shaders/include/texels.glsl's DRIVER_HALVES,
// which the device sets on its pipelines (tensor/internal/kernels.source);
// launchers get no field for them.
const (
	DeterministicID = 31
	DriverHalvesID  = 30
)

// deviceSet reports whether the device, not a launcher, sets constant id.
func deviceSet(id uint32) bool { return id == DeterministicID || id == DriverHalvesID }

// specConst is one specialization constant of a kernel.
type specConst struct {
	id   uint32
	name string // GLSL name; "LocalSizeX" for local_size_x_id
	kind string // uint, int, float or bool
	def  uint32 // default value's bits
}

// member is one scalar of a push-constant block.
type member struct {
	name string
	kind string // uint, int or float
	off  uint32
}

// names is what the unoptimized binary tells about a kernel's interface.
type names struct {
	spec     []specConst // by id
	pushName string      // the block's GLSL type name
	push     []member    // by offset
	binds    []string    // by binding
}

// decodeString reads a nul-terminated SPIR-V literal string.
func decodeString(ws []uint32) string {
	var b []byte
	for _, w := range ws {
		for i := 0; i < 4; i++ {
			c := byte(w >> (8 * i))
			if c == 0 {
				return string(b)
			}
			b = append(b, c)
		}
	}
	return string(b)
}

// scalarKind names a scalar type, or "" for anything else.
func (m *module) scalarKind(ty uint32) string {
	t := m.defs[ty]
	switch t.op {
	case opTypeBool:
		return "bool"
	case opTypeFloat:
		if t.arg[1] == 32 {
			return "float"
		}
	case opTypeInt:
		if t.arg[1] == 32 && len(t.arg) > 2 && t.arg[2] == 1 {
			return "int"
		}
		if t.arg[1] == 32 {
			return "uint"
		}
	}
	return ""
}

func reflectNames(b []byte) (names, error) {
	var n names
	m, err := parse(b)
	if err != nil {
		return n, err
	}
	// Specialization constants.
	for id, in := range m.defs {
		if in.op != opSpecConstant && in.op != opSpecConstantTrue && in.op != opSpecConstFalse {
			continue
		}
		sid, ok := m.deco[id][decSpecID]
		if !ok || len(sid) == 0 {
			continue // an expression of other constants
		}
		c := specConst{id: sid[0], name: m.names[id], kind: m.scalarKind(in.arg[0])}
		switch in.op {
		case opSpecConstant:
			c.def = in.arg[2]
		case opSpecConstantTrue:
			c.def = 1
		}
		if c.id == 0 && c.name == "" {
			c.name = "LocalSizeX"
		}
		if c.name == "" || c.kind == "" {
			return n, fmt.Errorf("specialization constant %d: want a named 32-bit scalar", c.id)
		}
		if deviceSet(c.id) {
			continue // set by the device, not by launchers (kernels.source)
		}
		if c.id >= 20 {
			return n, fmt.Errorf("specialization constant %s: id %d, the launchers take ids below 20", c.name, c.id)
		}
		if c.kind == "bool" && c.def != 0 {
			return n, fmt.Errorf("specialization constant %s: a bool must default to false, so that a zero Go field means the default", c.name)
		}
		n.spec = append(n.spec, c)
	}
	sort.Slice(n.spec, func(i, j int) bool { return n.spec[i].id < n.spec[j].id })
	// SPIR-V 1.6 (LocalSizeId) declares local_size_x_id's constant twice:
	// once for the execution mode, once in gl_WorkGroupSize. One field.
	if len(n.spec) > 1 && n.spec[0].id == 0 && n.spec[1].id == 0 && n.spec[0].def == n.spec[1].def {
		n.spec = n.spec[1:]
		n.spec[0].name = "LocalSizeX"
	}
	for i := 1; i < len(n.spec); i++ {
		if n.spec[i].id == n.spec[i-1].id {
			return n, fmt.Errorf("specialization constant id %d used twice", n.spec[i].id)
		}
	}
	// Push constants and bindings.
	binds := map[uint32]string{}
	for _, id := range m.vars {
		v := m.defs[id]
		ptr := m.defs[v.arg[0]]
		ty := ptr.arg[2]
		if v.arg[2] == scPushConstant {
			n.pushName = m.names[ty]
			st := m.defs[ty]
			for i, mem := range st.arg[1:] {
				kind := m.scalarKind(mem)
				off, ok := m.mdeco[ty][uint32(i)][decOffset]
				if kind == "" || kind == "bool" || !ok {
					return n, fmt.Errorf("push constant %d of %s: only 32-bit int, uint and float members are supported", i, n.pushName)
				}
				n.push = append(n.push, member{name: m.mnames[ty][uint32(i)], kind: kind, off: off[0]})
			}
			continue
		}
		bind, ok := m.deco[id][decBinding]
		if !ok {
			continue
		}
		name := m.names[id]
		if m.defs[ty].op == opTypeStruct {
			name = m.names[ty] // the block's type name: instances are usually anonymous
		}
		if name == "" {
			return n, fmt.Errorf("binding %d has no name", bind[0])
		}
		if prev, dup := binds[bind[0]]; !dup || name < prev {
			binds[bind[0]] = name // an alias takes the smallest of its names: stable
		}
	}
	sort.Slice(n.push, func(i, j int) bool { return n.push[i].off < n.push[j].off })
	n.binds = make([]string, len(binds))
	for i := range n.binds {
		name, ok := binds[uint32(i)]
		if !ok {
			return n, fmt.Errorf("binding %d is missing", i)
		}
		n.binds[i] = name
	}
	return n, nil
}

// checkAgainst verifies that the shipped binary's interface is the one the
// names describe: the optimizer may drop constants, never change them.
func (n names) checkAgainst(k kernel, opt []byte) error {
	if len(n.binds) != len(k.bindings) {
		return fmt.Errorf("unoptimized build has %d bindings, optimized %d", len(n.binds), len(k.bindings))
	}
	size := 0
	if len(n.push) > 0 {
		last := n.push[len(n.push)-1]
		size = int(last.off) + 4
	}
	if (size+3)&^3 != k.push {
		return fmt.Errorf("unoptimized push block is %d bytes, optimized %d", size, k.push)
	}
	m, err := parse(opt)
	if err != nil {
		return err
	}
	have := map[uint32]bool{}
	for _, c := range n.spec {
		have[c.id] = true
	}
	for id := range m.defs {
		if sid, ok := m.deco[id][decSpecID]; ok && len(sid) > 0 && !have[sid[0]] && !deviceSet(sid[0]) {
			return fmt.Errorf("optimized build has specialization constant %d, unknown to the unoptimized one", sid[0])
		}
	}
	return nil
}

// goName turns a GLSL name into an exported Go one: IN0_DT -> In0DT,
// min_scale -> MinScale, batchA -> BatchA.
func goName(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		switch {
		case initialisms[part] || len(part) == 1:
			b.WriteString(strings.ToUpper(part))
		case strings.ToUpper(part) == part:
			b.WriteString(part[:1] + strings.ToLower(part[1:]))
		default:
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

var initialisms = map[string]bool{"DT": true, "TM": true, "TN": true, "KK": true, "BM": true, "BN": true, "BK": true, "SG": true, "WGX": true}
