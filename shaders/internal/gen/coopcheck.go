package main

// checkKHR checks a module that uses SPV_KHR_cooperative_matrix as far as
// the NV-to-KHR pass could have got it wrong. Debian 12's spirv-val does not
// know the extension, so the generator runs this on every module the pass
// writes and the tests run it on the committed binaries. It checks:
//
//   - no trace of SPV_NV_cooperative_matrix is left; the KHR capability and
//     extension, the VulkanMemoryModel capability and the Vulkan memory
//     model are declared; the module is SPIR-V 1.3 or later;
//   - ids are below the bound and defined once; types and constants are
//     declared before the types that use them;
//   - every OpTypeCooperativeMatrixKHR has a numerical component type,
//     32-bit integer constants for scope, rows, columns and use, a use of
//     0, 1 or 2, and no twin;
//   - cooperative-matrix values are typed consistently through variables,
//     loads, stores, access chains, copies, phis and selects; loads and
//     stores go through pointers to scalars or vectors with a constant
//     layout of 0 or 1 and a stride; each MulAdd takes an A, a B and an
//     accumulator of matching sizes and scope and yields an accumulator;
//   - no other instruction touches a cooperative matrix.

import (
	"errors"
	"fmt"
)

type khrModule struct {
	defs   map[uint32]spvInst // types and constants
	order  map[uint32]int     // instruction index of each type or constant
	typeOf map[uint32]uint32  // value -> type, for the values the checker follows
	coop   map[uint32]bool    // types that are or contain a cooperative matrix
}

// constVal is the value of a 32-bit integer OpConstant.
func (m *khrModule) constVal(id uint32) (uint32, bool) {
	c, ok := m.defs[id]
	if !ok || c.op != opConstant || len(c.w) != 3 {
		return 0, false
	}
	t := m.defs[c.w[0]]
	if t.op != 21 || t.w[1] != 32 { // OpTypeInt 32
		return 0, false
	}
	return c.w[2], true
}

// isConst32 reports whether id is a constant instruction of 32-bit integer type.
func (m *khrModule) isConst32(id uint32) bool {
	c, ok := m.defs[id]
	if !ok || (c.op != opConstant && c.op != opSpecConstant && c.op != opSpecConstantOp) {
		return false
	}
	t := m.defs[c.w[0]]
	return t.op == 21 && t.w[1] == 32
}

// matrix returns the operands of a cooperative matrix type.
func (m *khrModule) matrix(t uint32) (comp, scope, rows, cols, use uint32, ok bool) {
	d, found := m.defs[t]
	if !found || d.op != opTypeCoopKHR || len(d.w) != 6 {
		return 0, 0, 0, 0, 0, false
	}
	use, _ = m.constVal(d.w[5])
	return d.w[1], d.w[2], d.w[3], d.w[4], use, true
}

func (m *khrModule) pointee(ptrType uint32) (sc, t uint32, ok bool) {
	d, found := m.defs[ptrType]
	if !found || d.op != 32 {
		return 0, 0, false
	}
	return d.w[1], d.w[2], true
}

// sameSize compares two size or scope operands: equal ids, or OpConstants
// of equal value.
func (m *khrModule) sameSize(a, b uint32) bool {
	if a == b {
		return true
	}
	va, oka := m.constVal(a)
	vb, okb := m.constVal(b)
	return oka && okb && va == vb
}

func checkKHR(b []byte) error {
	hdr, insts, err := decodeSPV(b)
	if err != nil {
		return err
	}
	if hdr[1] < 0x00010300 {
		return fmt.Errorf("SPIR-V version %#x: SPV_KHR_cooperative_matrix needs 1.3", hdr[1])
	}
	bound := hdr[3]
	m := &khrModule{defs: map[uint32]spvInst{}, order: map[uint32]int{}, typeOf: map[uint32]uint32{}, coop: map[uint32]bool{}}
	var capKHR, capVMM, extKHR, vulkanMM bool
	seen := map[uint32]bool{}
	define := func(id uint32) error {
		if id == 0 || id >= bound {
			return fmt.Errorf("id %d outside the bound %d", id, bound)
		}
		if seen[id] {
			return fmt.Errorf("id %%%d defined twice", id)
		}
		seen[id] = true
		return nil
	}
	before := func(i int, ids ...uint32) error {
		for _, id := range ids {
			if j, ok := m.order[id]; !ok || j >= i {
				return fmt.Errorf("instruction %d uses %%%d before its declaration", i, id)
			}
		}
		return nil
	}
	type coopKey struct{ comp, scope, rows, cols, use uint32 }
	twins := map[coopKey]uint32{}
	for i, in := range insts {
		w := in.w
		switch in.op {
		case opCapability:
			switch w[0] {
			case capCoopNV:
				return errors.New("CooperativeMatrixNV capability left")
			case capCoopKHR:
				capKHR = true
			case capVulkanMemoryModel:
				capVMM = true
			}
		case opExtension:
			switch spvString(w) {
			case extCoopNV:
				return errors.New("SPV_NV_cooperative_matrix extension left")
			case extCoopKHR:
				extKHR = true
			}
		case opMemoryModel:
			vulkanMM = len(w) == 2 && w[1] == memoryModelVulkan
		case opTypeCoopNV, opCoopLoadNV, opCoopStoreNV, opCoopMulAddNV, opCoopLengthNV:
			return fmt.Errorf("NV cooperative-matrix instruction (opcode %d) left", in.op)
		}
		if in.op == opSpecConstantOp && len(w) > 2 && w[2] == opCoopLengthNV {
			return errors.New("OpSpecConstantOp CooperativeMatrixLengthNV left")
		}
		switch {
		case isTypeDecl(in.op):
			if err := define(w[0]); err != nil {
				return err
			}
			switch in.op {
			case opTypeCoopKHR:
				if len(w) != 6 {
					return fmt.Errorf("OpTypeCooperativeMatrixKHR %%%d has %d operands, want 6", w[0], len(w))
				}
				if err := before(i, w[1:]...); err != nil {
					return err
				}
				if c := m.defs[w[1]]; c.op != 21 && c.op != 22 {
					return fmt.Errorf("cooperative matrix %%%d: component type is not numerical", w[0])
				}
				for _, x := range w[2:] {
					if !m.isConst32(x) {
						return fmt.Errorf("cooperative matrix %%%d: operand %%%d is not a 32-bit integer constant", w[0], x)
					}
				}
				use, ok := m.constVal(w[5])
				if !ok || use > useAcc {
					return fmt.Errorf("cooperative matrix %%%d: use %%%d is not 0, 1 or 2", w[0], w[5])
				}
				k := coopKey{w[1], w[2], w[3], w[4], use}
				for j, x := range []*uint32{&k.scope, &k.rows, &k.cols} {
					if v, ok := m.constVal(w[2+j]); ok {
						*x = v | 1<<31 // a value, not an id
					}
				}
				if t, dup := twins[k]; dup {
					return fmt.Errorf("cooperative matrix types %%%d and %%%d are the same", t, w[0])
				}
				twins[k] = w[0]
				m.coop[w[0]] = true
			case 28, 29: // arrays
				if err := before(i, w[1]); err != nil {
					return err
				}
				m.coop[w[0]] = m.coop[w[1]]
			case 32: // pointer
				if err := before(i, w[2]); err != nil {
					return err
				}
				m.coop[w[0]] = m.coop[w[2]]
			case 30, opTypeFunction:
				for _, x := range w[1:] {
					if m.coop[x] {
						return fmt.Errorf("type %%%d contains a cooperative matrix", w[0])
					}
				}
			}
			m.defs[w[0]] = in
			m.order[w[0]] = i
		case in.op >= opConstantTrue && in.op <= opSpecConstantOp:
			if err := define(w[1]); err != nil {
				return err
			}
			if err := before(i, w[0]); err != nil {
				return err
			}
			m.defs[w[1]] = in
			m.order[w[1]] = i
			m.typeOf[w[1]] = w[0]
		case hasResultType(in.op):
			if err := define(w[1]); err != nil {
				return err
			}
			m.typeOf[w[1]] = w[0]
		}
	}
	if !capKHR || !extKHR {
		return errors.New("CooperativeMatrixKHR capability or SPV_KHR_cooperative_matrix extension missing")
	}
	if !capVMM || !vulkanMM {
		return errors.New("SPV_KHR_cooperative_matrix needs the VulkanMemoryModel capability and memory model")
	}
	for _, in := range insts {
		if err := m.checkInst(in); err != nil {
			return err
		}
	}
	return nil
}

// checkInst checks one instruction's use of cooperative-matrix types.
func (m *khrModule) checkInst(in spvInst) error {
	w := in.w
	ty := func(id uint32) uint32 { return m.typeOf[id] }
	same := func(what string, want uint32, ids ...uint32) error {
		for _, id := range ids {
			if got := ty(id); got != want {
				return fmt.Errorf("%s: %%%d has type %%%d, want %%%d", what, id, got, want)
			}
		}
		return nil
	}
	if noCoop(in.op) {
		return nil
	}
	involved := false
	for i, x := range w {
		if m.coop[x] && (i == 0 || in.op == opStore || in.op == opCoopLengthKHR) || m.coop[ty(x)] {
			involved = true
		}
	}
	if !involved && in.op != opCoopLoadKHR && in.op != opCoopStoreKHR && in.op != opCoopMulAddKHR {
		return nil
	}
	switch in.op {
	case opVariable:
		if _, _, ok := m.pointee(w[0]); !ok {
			return fmt.Errorf("variable %%%d: type is not a pointer", w[1])
		}
		if len(w) > 3 {
			_, t, _ := m.pointee(w[0])
			return same("variable initializer", t, w[3])
		}
	case opLoad:
		_, t, ok := m.pointee(ty(w[2]))
		if !ok || t != w[0] {
			return fmt.Errorf("OpLoad %%%d: result type %%%d, pointer to %%%d", w[1], w[0], t)
		}
	case opStore:
		_, t, ok := m.pointee(ty(w[0]))
		if !ok || t != ty(w[1]) {
			return fmt.Errorf("OpStore to %%%d: object type %%%d, pointer to %%%d", w[0], ty(w[1]), t)
		}
	case opAccessChain, opInBoundsAccess:
		sc, t, ok := m.pointee(ty(w[2]))
		rsc, rt, rok := m.pointee(w[0])
		if !ok || !rok || sc != rsc {
			return fmt.Errorf("access chain %%%d: not pointers of one storage class", w[1])
		}
		for range w[3:] {
			d := m.defs[t]
			switch d.op {
			case 28, 29:
				t = d.w[1]
			default:
				return fmt.Errorf("access chain %%%d: indexes into %%%d (opcode %d)", w[1], t, d.op)
			}
		}
		if t != rt {
			return fmt.Errorf("access chain %%%d: reaches %%%d, result points to %%%d", w[1], t, rt)
		}
	case opCopyObject:
		return same("OpCopyObject", w[0], w[2])
	case opSelect:
		return same("OpSelect", w[0], w[3], w[4])
	case opPhi:
		for i := 2; i+1 < len(w); i += 2 {
			if err := same("OpPhi", w[0], w[i]); err != nil {
				return err
			}
		}
	case opConstantComposite, opCompositeConstr, opSpecConstantComposite:
		if comp, _, _, _, _, ok := m.matrix(w[0]); ok {
			if len(w) != 3 {
				return fmt.Errorf("composite %%%d of a cooperative matrix needs one constituent", w[1])
			}
			return same("cooperative matrix constituent", comp, w[2])
		}
		if d := m.defs[w[0]]; d.op == 28 {
			return same("array constituent", d.w[1], w[2:]...)
		}
		return fmt.Errorf("composite %%%d: unexpected type %%%d", w[1], w[0])
	case opCoopLoadKHR, opCoopStoreKHR:
		var ptr, mat, lay uint32
		var rest []uint32
		if in.op == opCoopLoadKHR {
			ptr, mat, lay, rest = w[2], w[0], w[3], w[4:]
		} else {
			ptr, mat, lay, rest = w[0], ty(w[1]), w[2], w[3:]
		}
		if _, _, _, _, _, ok := m.matrix(mat); !ok {
			return fmt.Errorf("cooperative load or store of %%%d, which is not a cooperative matrix", mat)
		}
		_, t, ok := m.pointee(ty(ptr))
		if d := m.defs[t]; !ok || (d.op != 21 && d.op != 22 && d.op != 23) {
			return fmt.Errorf("cooperative load or store through %%%d, not a pointer to a scalar or vector", ptr)
		}
		if v, ok := m.constVal(lay); !ok || v > layoutColumnMajor {
			return fmt.Errorf("cooperative load or store: layout %%%d is not the constant 0 or 1", lay)
		}
		if len(rest) == 0 {
			return errors.New("cooperative load or store without a stride")
		}
	case opCoopMulAddKHR:
		if len(w) != 5 {
			return fmt.Errorf("MulAdd %%%d: %d operands", w[1], len(w))
		}
		var c [4][5]uint32
		for i, t := range []uint32{ty(w[2]), ty(w[3]), ty(w[4]), w[0]} {
			comp, scope, rows, cols, use, ok := m.matrix(t)
			if !ok {
				return fmt.Errorf("MulAdd %%%d: operand %d is not a cooperative matrix", w[1], i)
			}
			c[i] = [5]uint32{comp, scope, rows, cols, use}
		}
		if c[0][4] != useA || c[1][4] != useB || c[2][4] != useAcc || c[3][4] != useAcc {
			return fmt.Errorf("MulAdd %%%d: uses %d %d %d -> %d, want 0 1 2 -> 2", w[1], c[0][4], c[1][4], c[2][4], c[3][4])
		}
		ok := m.sameSize(c[0][1], c[3][1]) && m.sameSize(c[1][1], c[3][1]) && m.sameSize(c[2][1], c[3][1]) &&
			m.sameSize(c[0][2], c[3][2]) && m.sameSize(c[0][3], c[1][2]) && m.sameSize(c[1][3], c[3][3]) &&
			m.sameSize(c[2][2], c[3][2]) && m.sameSize(c[2][3], c[3][3])
		if !ok {
			return fmt.Errorf("MulAdd %%%d: sizes or scopes do not match", w[1])
		}
	case opCoopLengthKHR:
		if _, _, _, _, _, ok := m.matrix(w[2]); !ok {
			return fmt.Errorf("OpCooperativeMatrixLengthKHR of %%%d, not a cooperative matrix type", w[2])
		}
	case opName, opMemberName, opDecorate, opDecorateId, opDecorateString, opMemberDecorate, opMemberDecString,
		opUndef, opConstantNull:
	default:
		if isTypeDecl(in.op) || in.op >= opConstantTrue && in.op <= opSpecConstantOp {
			return nil
		}
		if coopElementwise[in.op] {
			for _, x := range w[2:] {
				if m.coop[ty(x)] && ty(x) != w[0] {
					return fmt.Errorf("element-wise opcode %d: operand %%%d has type %%%d, result %%%d", in.op, x, ty(x), w[0])
				}
			}
			return nil
		}
		return fmt.Errorf("opcode %d touches a cooperative matrix", in.op)
	}
	return nil
}
