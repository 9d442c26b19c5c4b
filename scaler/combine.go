package scaler

import "fmt"

// CombineFound makes opt's inf check of this iteration agree with other
// processes' (data-parallel training): after Unscale(opt) and before
// Step(opt), it reads whether this process found an inf or NaN (a host
// wait), passes it to combine, which returns the verdict of all processes
// (their maximum), and if that is true records it as found here, so that
// Step skips and Update backs off on every process alike. A disabled
// scaler does nothing.
func (s *Scaler) CombineFound(opt Optimizer, combine func(found bool) (bool, error)) error {
	if s.disabled {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stateOf(opt)
	if err != nil {
		return err
	}
	if st.stage != unscaled {
		return fmt.Errorf("scaler: CombineFound: call Unscale before it and Step after it")
	}
	found := st.found
	v, err := found.Item()
	if err != nil {
		return fmt.Errorf("scaler: combine found: %w", err)
	}
	all, err := combine(v != 0)
	if err != nil {
		return fmt.Errorf("scaler: combine found: %w", err)
	}
	if all && v == 0 {
		if err := s.ls.MarkFound(found); err != nil {
			return fmt.Errorf("scaler: combine found: %w", err)
		}
	}
	return nil
}
