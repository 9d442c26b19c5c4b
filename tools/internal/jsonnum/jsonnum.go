// Package jsonnum holds the number type of the tools' -json lines.
package jsonnum

import (
	"encoding/json"
	"math"
)

// Float is a number, or null for NaN and the infinities, which JSON cannot
// hold (the loss of a diverged run): encoding/json refuses them, and a line
// dropped for it would hide the divergence it reports.
type Float float64

// MarshalJSON writes f as a JSON number, or null when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}
