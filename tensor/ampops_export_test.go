package tensor

import "encoding/binary"

// InvScaleBits returns the state's inv_scale word, waiting for the device.
func (s *LossScale) InvScaleBits() (uint32, error) {
	raw, err := s.state.raw("LossScale.InvScaleBits")
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(raw[4*wordInvScale:]), nil
}
