package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckWritable fails unless a report can be written at path (its folder
// exists and takes a new file), so that a tool refuses a bad -report before
// an hour of training rather than after it. It leaves nothing behind.
func CheckWritable(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".report-check-*")
	if err != nil {
		return fmt.Errorf("cannot write the report %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
