//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package checkpoint

import (
	"errors"
	"fmt"
	"os"
)

const flocked = false

// lockFile creates path, which must not exist.
func lockFile(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		content, _ := os.ReadFile(path)
		e := holder(path, content)
		return nil, fmt.Errorf("%w (if that process no longer runs, remove %s)", e, path)
	}
	if err != nil {
		return nil, err
	}
	return &Lock{f: f, path: path}, nil
}
