package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LockName is the name of the lock file LockDir makes in a directory.
const LockName = "LOCK"

// Lock is a directory's lock, held by one writer: see LockDir.
type Lock struct {
	f    *os.File
	path string
}

// LockedError is the error of LockDir for a directory whose lock another
// writer holds. It says who, from what the holder wrote into the lock file.
type LockedError struct {
	Path  string    // the lock file
	PID   int       // the holder's process id; 0 when unknown
	Host  string    // the holder's host name
	Since time.Time // when it took the lock
}

func (e *LockedError) Error() string {
	who := "another writer (it has not written its pid yet)"
	if e.PID != 0 {
		who = fmt.Sprintf("pid %d on host %s since %s", e.PID, e.Host, e.Since.Format(time.DateTime))
	}
	return fmt.Sprintf("checkpoint: %s is held by %s: another process is saving a checkpoint into this directory", e.Path, who)
}

// LockDir takes the lock of dir, for one writer at a time, and writes the
// process id, host name and time into the lock file dir/LOCK. When another
// writer holds it (another process, or another Lock of this one), LockDir
// returns a *LockedError naming the holder at once; it does not wait.
//
// Where flock(2) exists (Linux, the BSDs, macOS), the lock is the file's
// flock: the kernel releases it when its holder dies, so the LOCK file of a
// process that crashed or was killed is stale and is taken over. Elsewhere
// the lock is the file's existence (created with O_EXCL), and a LOCK left
// by a dead process must be removed by hand; the error says so.
func LockDir(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockName)
	l, err := lockFile(path)
	if err != nil {
		var le *LockedError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("checkpoint: lock %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	info := fmt.Sprintf("pid %d\nhost %s\nsince %s\n", os.Getpid(), host, time.Now().Format(time.RFC3339))
	err = l.f.Truncate(0)
	if err == nil {
		_, err = l.f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		l.Unlock()
		return nil, fmt.Errorf("checkpoint: lock %s: %w", dir, err)
	}
	return l, nil
}

// Unlock removes the lock file and releases the lock. It is idempotent and
// safe on nil.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	var err error
	if flocked {
		// Removed while still held: a writer that opened it meanwhile
		// finds, once it has the lock, that the path no longer names its
		// file.
		err = os.Remove(l.path)
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
	} else {
		// The file's existence is the lock, and an open file may not be
		// removable.
		err = l.f.Close()
		if rerr := os.Remove(l.path); err == nil {
			err = rerr
		}
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("checkpoint: unlock %s: %w", l.path, err)
	}
	return nil
}

// holder reads what a lock's holder wrote into its file.
func holder(path string, content []byte) *LockedError {
	e := &LockedError{Path: path}
	for _, line := range strings.Split(string(content), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			e.PID, _ = strconv.Atoi(v)
		case "host":
			e.Host = v
		case "since":
			e.Since, _ = time.Parse(time.RFC3339, v)
		}
	}
	return e
}
