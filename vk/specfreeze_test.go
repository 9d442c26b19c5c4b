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
	for _, c := range []struct {
		name         string
		spec         map[uint32]uint32
		want5, want6 uint32 // opcodes the two SpecId'd constants become
	}{
		{"defaults", nil, spvOpConstantFalse, spvOpConstantTrue},
		{"set", map[uint32]uint32{31: 1, 7: 0, 2: 4}, spvOpConstantTrue, spvOpConstantFalse},
		{"any nonzero is true", map[uint32]uint32{31: 2}, spvOpConstantTrue, spvOpConstantTrue},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := specModule()
			got := freezeBoolSpecs(in, c.spec)
			if !slices.Equal(in, specModule()) {
				t.Fatal("freezeBoolSpecs modified its input")
			}
			want := []uint32{
				0x07230203, 0x00010000, 0, 10, 0,
				4<<16 | spvOpDecorate, 7, spvDecorationSpecId, 2, // the integer stays specializable
				2<<16 | 20, 2,
				4<<16 | 21, 3, 32, 0,
				3<<16 | c.want5, 2, 5,
				3<<16 | c.want6, 2, 6,
				4<<16 | 50, 3, 7, 9,
				3<<16 | spvOpConstantFalse, 2, 8,
			}
			if !slices.Equal(got, want) {
				t.Errorf("got  %#x\nwant %#x", got, want)
			}
		})
	}
}

func TestFreezeBoolSpecsLeavesWhatItCannotWalk(t *testing.T) {
	zero := specModule()
	zero[13] = 0 // an instruction of no words
	long := specModule()
	long[len(long)-3] = 9<<16 | spvOpSpecConstantFalse // runs past the end
	none := specModule()[:23]                          // no boolean constant
	for name, m := range map[string][]uint32{"zero-length instruction": zero, "overlong instruction": long, "no boolean": none, "header only": specModule()[:5]} {
		if got := freezeBoolSpecs(m, map[uint32]uint32{31: 1}); !slices.Equal(got, m) {
			t.Errorf("%s: changed to %#x", name, got)
		}
	}
}
