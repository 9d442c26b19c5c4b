package scaler_test

import (
	"fmt"

	"github.com/vkamp/vkamp/scaler"
)

// A state dict as PyTorch's GradScaler writes it loads into a vkamp scaler.
func Example() {
	s, err := scaler.New(scaler.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	err = s.LoadStateDict([]byte(`{"scale": 32768.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 1000, "_growth_tracker": 3}`))
	scale, _ := s.ScaleValue()
	fmt.Println(scale, s.GrowthInterval(), err)
	sd, _ := s.StateDict()
	fmt.Println(string(sd))
	// Output:
	// 32768 1000 <nil>
	// {"scale":32768,"growth_factor":2,"backoff_factor":0.5,"growth_interval":1000,"_growth_tracker":3}
}
