package main

// A minimal SPIR-V reflector: just enough of the binary format to find the
// storage-buffer bindings, push-constant size and workgroup size the runtime
// needs to build a pipeline. Unknown instructions are skipped by word count.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SPIR-V opcodes, decorations and enums used by the reflector.
const (
	opName                  = 5
	opMemberName            = 6
	opEntryPoint            = 15
	opExecutionMode         = 16
	opTypeInt               = 21
	opTypeFloat             = 22
	opTypeVector            = 23
	opTypeMatrix            = 24
	opTypeArray             = 28
	opTypeRuntimeArray      = 29
	opTypeStruct            = 30
	opTypePointer           = 32
	opTypeImage             = 25
	opTypeSampledImage      = 27
	opConstant              = 43
	opConstantComposite     = 44
	opSpecConstantTrue      = 48
	opSpecConstFalse        = 49
	opSpecConstant          = 50
	opSpecConstantComposite = 51
	opVariable              = 59
	opDecorate              = 71
	opMemberDecorate        = 72
	opExecutionModeId       = 331

	decSpecID        = 1
	decBlock         = 2
	decBufferBlock   = 3
	decRowMajor      = 4
	decArrayStride   = 6
	decMatrixStride  = 7
	decBuiltIn       = 11
	decNonWritable   = 24
	decNonReadable   = 25
	decBinding       = 33
	decDescriptorSet = 34
	decOffset        = 35

	scUniformConstant    = 0
	scUniform            = 2
	dimBuffer            = 5
	scPushConstant       = 9
	scStorageBuffer      = 12
	builtInWorkgroupSize = 25
	modeLocalSize        = 17
	modeLocalSizeID      = 38
	modelGLCompute       = 5
)

// minArgs is the operand count below which an instruction we read is malformed.
var minArgs = map[uint32]int{opTypeInt: 2, opTypeFloat: 2, opTypeVector: 3, opTypeMatrix: 3, opTypeArray: 3,
	opTypeRuntimeArray: 2, opTypeStruct: 1, opTypePointer: 3, opConstant: 3, opSpecConstant: 3,
	opConstantComposite: 2, opSpecConstantComposite: 2, opVariable: 3, opDecorate: 2,
	opMemberDecorate: 3, opExecutionMode: 2, opExecutionModeId: 2, opEntryPoint: 1,
	opName: 1, opMemberName: 2, opTypeBool: 1, opSpecConstantTrue: 2, opSpecConstFalse: 2}

type inst struct {
	op  uint32
	arg []uint32 // operands, without the leading count/opcode word
}

type decos map[uint32][]uint32 // decoration -> literals

type module struct {
	defs    map[uint32]inst              // result id -> defining instruction
	deco    map[uint32]decos             // id -> decorations
	mdeco   map[uint32]map[uint32]decos  // struct id -> member -> decorations
	vars    []uint32                     // OpVariable ids, in module order
	modes   []inst                       // OpExecutionMode(Id)
	wgSize  uint32                       // id decorated BuiltIn WorkgroupSize, or 0
	entries int                          // GLCompute entry points
	names   map[uint32]string            // OpName
	mnames  map[uint32]map[uint32]string // OpMemberName: struct -> member -> name
}

func parse(b []byte) (*module, error) {
	if len(b)%4 != 0 || len(b) < 20 || binary.LittleEndian.Uint32(b) != 0x07230203 {
		return nil, errors.New("not a little-endian SPIR-V module")
	}
	m := &module{defs: map[uint32]inst{}, deco: map[uint32]decos{}, mdeco: map[uint32]map[uint32]decos{},
		names: map[uint32]string{}, mnames: map[uint32]map[uint32]string{}}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	for i := 5; i < len(w); {
		n, op := int(w[i]>>16), w[i]&0xffff
		if n == 0 || i+n > len(w) {
			return nil, fmt.Errorf("bad instruction at word %d", i)
		}
		in := inst{op, w[i+1 : i+n]}
		i += n
		a := in.arg
		if len(a) < minArgs[op] {
			return nil, fmt.Errorf("short instruction (opcode %d)", op)
		}
		switch op {
		case opName:
			m.names[a[0]] = decodeString(a[1:])
		case opMemberName:
			if m.mnames[a[0]] == nil {
				m.mnames[a[0]] = map[uint32]string{}
			}
			m.mnames[a[0]][a[1]] = decodeString(a[2:])
		case opSpecConstantTrue, opSpecConstFalse:
			m.defs[a[1]] = in
		case opTypeBool, opTypeInt, opTypeFloat, opTypeVector, opTypeMatrix, opTypeArray, opTypeRuntimeArray, opTypeStruct, opTypePointer,
			opTypeImage, opTypeSampledImage:
			m.defs[a[0]] = in
		case opConstant, opSpecConstant, opConstantComposite, opSpecConstantComposite:
			m.defs[a[1]] = in
		case opVariable:
			m.defs[a[1]] = in
			m.vars = append(m.vars, a[1])
		case opDecorate:
			if m.deco[a[0]] == nil {
				m.deco[a[0]] = decos{}
			}
			m.deco[a[0]][a[1]] = a[2:]
			if a[1] == decBuiltIn && len(a) > 2 && a[2] == builtInWorkgroupSize {
				m.wgSize = a[0]
			}
		case opMemberDecorate:
			if m.mdeco[a[0]] == nil {
				m.mdeco[a[0]] = map[uint32]decos{}
			}
			if m.mdeco[a[0]][a[1]] == nil {
				m.mdeco[a[0]][a[1]] = decos{}
			}
			m.mdeco[a[0]][a[1]][a[2]] = a[3:]
		case opExecutionMode, opExecutionModeId:
			m.modes = append(m.modes, in)
		case opEntryPoint:
			if a[0] == modelGLCompute {
				m.entries++
			}
		}
	}
	return m, nil
}

// lit returns the first literal of a decoration, or an error naming it.
func (d decos) lit(dec uint32, what string) (uint32, error) {
	v, ok := d[dec]
	if !ok || len(v) == 0 {
		return 0, fmt.Errorf("missing %s decoration", what)
	}
	return v[0], nil
}

func reflectSPV(b []byte) (kernel, error) {
	var k kernel
	m, err := parse(b)
	if err != nil {
		return k, err
	}
	if m.entries != 1 {
		return k, fmt.Errorf("want one GLCompute entry point, found %d", m.entries)
	}
	binds := map[uint32]uint8{}
	pushVars := 0
	for _, id := range m.vars {
		v, d := m.defs[id], m.deco[id]
		ptr := m.defs[v.arg[0]]
		if ptr.op != opTypePointer {
			return k, fmt.Errorf("variable %%%d does not have a pointer type", id)
		}
		switch v.arg[2] {
		case scPushConstant:
			if pushVars++; pushVars > 1 {
				return k, errors.New("more than one push-constant block")
			}
			if k.push, err = m.size(ptr.arg[2], nil); err != nil {
				return k, fmt.Errorf("push constants: %v", err)
			}
			k.push = (k.push + 3) &^ 3 // VkPushConstantRange.size must be a multiple of 4
			continue
		case scStorageBuffer, scUniform:
		case scUniformConstant:
			if bind, ok, err := m.texelBinding(id, ptr.arg[2]); err != nil {
				return k, err
			} else if ok {
				if _, dup := binds[bind]; dup {
					return k, fmt.Errorf("binding %d declared twice", bind)
				}
				binds[bind] = accRead | accTexels
				continue
			}
			fallthrough
		default:
			if _, ok := d[decBinding]; ok {
				return k, fmt.Errorf("descriptor %%%d (storage class %d) is not a storage buffer; only storage buffers and usamplerBuffers are supported", id, v.arg[2])
			}
			continue
		}
		st := m.defs[ptr.arg[2]]
		if st.op != opTypeStruct {
			return k, fmt.Errorf("descriptor %%%d: arrays of buffers are not supported", id)
		}
		sd := m.deco[st.arg[0]]
		_, block := sd[decBlock]
		_, bufBlock := sd[decBufferBlock]
		if v.arg[2] == scUniform && block { // a UBO needs another descriptor type
			return k, fmt.Errorf("descriptor %%%d is a uniform buffer; use a storage buffer or push constants", id)
		}
		if !block && !bufBlock {
			return k, fmt.Errorf("descriptor %%%d: buffer struct is not a Block", id)
		}
		set, err := d.lit(decDescriptorSet, "DescriptorSet")
		if err != nil {
			return k, err
		}
		bind, err := d.lit(decBinding, "Binding")
		if err != nil {
			return k, err
		}
		if set != 0 {
			return k, fmt.Errorf("binding %d is in descriptor set %d; only set 0 is supported", bind, set)
		}
		prev, dup := binds[bind]
		if dup && prev&accTexels != 0 {
			return k, fmt.Errorf("binding %d declared twice", bind)
		}
		// glslang puts `readonly`/`writeonly` on every member, not the variable.
		var acc uint8
		if !m.all(id, st, decNonReadable) {
			acc |= accRead
		}
		if !m.all(id, st, decNonWritable) {
			acc |= accWrite
		}
		if acc == 0 {
			return k, fmt.Errorf("binding %d is both readonly and writeonly", bind)
		}
		// A storage buffer declared twice is one binding seen through two
		// element types (an alias): it needs what both views need.
		binds[bind] = prev | acc
	}
	k.bindings = make([]uint8, len(binds))
	for i := range k.bindings {
		a, ok := binds[uint32(i)]
		if !ok {
			return k, fmt.Errorf("bindings in set 0 are not dense: binding %d is missing (glslc -O drops unused bindings)", i)
		}
		k.bindings[i] = a
	}
	k.local, k.specX, err = m.localSize()
	return k, err
}

// texelBinding reports the binding of variable id, of type ty, if it is a
// buffer texture in set 0 (usamplerBuffer: a uniform texel buffer).
func (m *module) texelBinding(id, ty uint32) (uint32, bool, error) {
	si := m.defs[ty]
	if si.op != opTypeSampledImage {
		return 0, false, nil
	}
	img := m.defs[si.arg[1]]
	if img.op != opTypeImage || img.arg[2] != dimBuffer {
		return 0, false, nil
	}
	d := m.deco[id]
	set, err := d.lit(decDescriptorSet, "DescriptorSet")
	if err != nil {
		return 0, false, err
	}
	bind, err := d.lit(decBinding, "Binding")
	if err != nil {
		return 0, false, err
	}
	if set != 0 {
		return 0, false, fmt.Errorf("binding %d is in descriptor set %d; only set 0 is supported", bind, set)
	}
	return bind, true, nil
}

// all reports whether dec is on the variable or on every member of its struct.
func (m *module) all(v uint32, st inst, dec uint32) bool {
	if _, ok := m.deco[v][dec]; ok {
		return true
	}
	n := len(st.arg) - 1
	for i := 0; i < n; i++ {
		if _, ok := m.mdeco[st.arg[0]][uint32(i)][dec]; !ok {
			return false
		}
	}
	return n > 0
}

// size is the byte extent of a type in an explicitly laid-out block; md holds
// the decorations of the struct member it appears as (for matrix strides).
func (m *module) size(id uint32, md decos) (int, error) {
	t, ok := m.defs[id]
	if !ok {
		return 0, fmt.Errorf("unknown type %%%d", id)
	}
	switch t.op {
	case opTypeInt, opTypeFloat:
		return int(t.arg[1] / 8), nil
	case opTypeVector:
		c, err := m.size(t.arg[1], nil)
		return c * int(t.arg[2]), err
	case opTypeMatrix:
		stride, err := md.lit(decMatrixStride, "MatrixStride")
		if _, row := md[decRowMajor]; row && err == nil {
			return int(stride * m.defs[t.arg[1]].arg[2]), nil // stride per row
		}
		return int(stride * t.arg[2]), err
	case opTypeArray:
		stride, err := m.deco[id].lit(decArrayStride, "ArrayStride")
		if err != nil {
			return 0, err
		}
		n := m.defs[t.arg[2]]
		if n.op != opConstant { // a spec-constant length has no fixed size
			return 0, errors.New("array length is not a plain constant")
		}
		return int(stride * n.arg[2]), nil
	case opTypeStruct:
		max := 0
		for i, mem := range t.arg[1:] {
			mdi := m.mdeco[id][uint32(i)]
			off, err := mdi.lit(decOffset, "Offset")
			if err != nil {
				return 0, err
			}
			s, err := m.size(mem, mdi)
			if err != nil {
				return 0, err
			}
			if e := int(off) + s; e > max {
				max = e
			}
		}
		return max, nil
	}
	return 0, fmt.Errorf("unsupported type (opcode %d)", t.op)
}

// localSize resolves the workgroup size. A WorkgroupSize builtin overrides the
// LocalSize mode; glslc emits one (with LocalSize 1 1 1) for local_size_*_id.
func (m *module) localSize() (ls [3]uint32, specX bool, err error) {
	var ids []uint32
	found := false
	for _, e := range m.modes {
		switch {
		case e.op == opExecutionMode && e.arg[1] == modeLocalSize && len(e.arg) >= 5:
			copy(ls[:], e.arg[2:5])
			found = true
		case e.op == opExecutionModeId && e.arg[1] == modeLocalSizeID && len(e.arg) >= 5:
			ids, found = e.arg[2:5], true
		}
	}
	if c, ok := m.defs[m.wgSize]; ok && m.wgSize != 0 {
		if (c.op != opConstantComposite && c.op != opSpecConstantComposite) || len(c.arg) < 5 {
			return ls, false, errors.New("WorkgroupSize builtin is not a constant composite")
		}
		ids, found = c.arg[2:5], true
	}
	if !found {
		return ls, false, errors.New("no local size")
	}
	for i, id := range ids {
		c := m.defs[id]
		if (c.op != opConstant && c.op != opSpecConstant) || len(c.arg) < 3 {
			return ls, false, fmt.Errorf("local size %c is not a scalar constant", "xyz"[i])
		}
		ls[i] = c.arg[2]
		if c.op != opSpecConstant {
			continue
		}
		sid, err := m.deco[id].lit(decSpecID, "SpecId")
		if err != nil || i != 0 || sid != 0 {
			return ls, false, fmt.Errorf("local size %c is a specialization constant; only local_size_x_id = 0 is supported", "xyz"[i])
		}
		specX = true
	}
	return ls, specX, nil
}
