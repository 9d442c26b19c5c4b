package ranks

import (
	"slices"
	"strings"
	"testing"
)

// TestDeviceList: -devices with an empty entry is an error naming it; it
// once opened a rank on the default device for each.
func TestDeviceList(t *testing.T) {
	for _, bad := range []string{",", "0,", ",1", "0,,1", " , "} {
		if _, err := deviceList(bad); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("-devices %q: got %v, want an error about an empty entry", bad, err)
		}
	}
	for in, want := range map[string][]string{"": nil, "0": {"0"}, "0,1": {"0", "1"}, "llvm,Swift": {"llvm", "Swift"}} {
		if got, err := deviceList(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("-devices %q: got %q, %v, want %q", in, got, err, want)
		}
	}
}
