package vk

import (
	"slices"
	"testing"
)

// specModule is the declarations of a module with two boolean
// specialization constants (%5 SpecId 31 default false, %6 SpecId 7 default
// true), an unnamed boolean one (%8, default false) and an integer one (%7
// SpecId 2, default 9).
func specModule() []uint32 {
	return []uint32{
		0x07230203, 0x00010000, 0, 10, 0, // header
		4<<16 | spvOpDecorate, 5, spvDecorationSpecId, 31,
		4<<16 | spvOpDecorate, 6, spvDecorationSpecId, 7,
		4<<16 | spvOpDecorate, 7, spvDecorationSpecId, 2,
		2<<16 | 20, 2, // %2 = OpTypeBool
		4<<16 | 21, 3, 32, 0, // %3 = OpTypeInt 32 0
		3<<16 | spvOpSpecConstantFalse, 2, 5,
		3<<16 | spvOpSpecConstantTrue, 2, 6,
		4<<16 | 50, 3, 7, 9, // %7 = OpSpecConstant %3 9
		3<<16 | spvOpSpecConstantFalse, 2, 8,
	}
}

func TestFreezeBoolSpecs(t *testing.T) {
	header := []uint32{0x07230203, 0x00010000, 0, 10, 0}
	dec := func(id, specID uint32) []uint32 {
		return []uint32{4<<16 | spvOpDecorate, id, spvDecorationSpecId, specID}
	}
	types := []uint32{2<<16 | 20, 2, 4<<16 | 21, 3, 32, 0}
	boolean := func(op, id uint32) []uint32 { return []uint32{3<<16 | op, 2, id} }
	integer := []uint32{4<<16 | 50, 3, 7, 9}
	cat := func(parts ...[]uint32) []uint32 { return slices.Concat(parts...) }
	for _, c := range []struct {
		name string
		spec map[uint32]uint32
		want []uint32
	}{
		// %5 false is frozen, %6 true stays specializable, as does the
		// integer; %8 (no SpecId, default false) is frozen.
		{"defaults", nil, cat(header, dec(6, 7), dec(7, 2), types,
			boolean(spvOpConstantFalse, 5), boolean(spvOpSpecConstantTrue, 6), integer, boolean(spvOpConstantFalse, 8))},
		{"set", map[uint32]uint32{31: 1, 7: 0, 2: 4}, cat(header, dec(5, 31), dec(7, 2), types,
			boolean(spvOpSpecConstantFalse, 5), boolean(spvOpConstantFalse, 6), integer, boolean(spvOpConstantFalse, 8))},
		{"any nonzero is true", map[uint32]uint32{31: 2}, cat(header, dec(5, 31), dec(6, 7), dec(7, 2), types,
			boolean(spvOpSpecConstantFalse, 5), boolean(spvOpSpecConstantTrue, 6), integer, boolean(spvOpConstantFalse, 8))},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := specModule()
			got := freezeBoolSpecs(in, c.spec)
			if !slices.Equal(in, specModule()) {
				t.Fatal("freezeBoolSpecs modified its input")
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %#x\nwant %#x", got, c.want)
			}
		})
	}
}

func TestFreezeBoolSpecsLeavesWhatItCannotWalk(t *testing.T) {
	zero := specModule()
	zero[13] = 0 // an instruction of no words
	long := specModule()
	long[len(long)-3] = 9<<16 | spvOpSpecConstantFalse // runs past the end
	for name, m := range map[string][]uint32{
		"zero-length instruction": zero,
		"overlong instruction":    long,
		"no boolean":              specModule()[:23],
		"none false":              specModule()[:33], // %8 left out, %5 set true below
		"header only":             specModule()[:5],
	} {
		if got := freezeBoolSpecs(m, map[uint32]uint32{31: 1}); !slices.Equal(got, m) {
			t.Errorf("%s: changed to %#x", name, got)
		}
	}
}
