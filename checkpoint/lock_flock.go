//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"errors"
	"io"
	"os"
	"syscall"
)

const flocked = true

// lockFile opens or creates path and takes its flock without waiting.
func lockFile(path string) (*Lock, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			content, _ := io.ReadAll(io.LimitReader(f, 4096))
			f.Close()
			return nil, holder(path, content)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		// The holder that just unlocked removed the file after this open:
		// the lock taken is of a file no longer at path. Take path's.
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			return &Lock{f: f, path: path}, nil
		}
		f.Close()
		if err1 != nil {
			return nil, err1
		}
		if err2 != nil && !errors.Is(err2, os.ErrNotExist) {
			return nil, err2
		}
	}
}
