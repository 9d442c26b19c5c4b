package checkpoint

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// SaveJSON writes v to path as indented JSON, atomically.
func SaveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return fmt.Errorf("checkpoint: save %s: %w", path, err)
	}
	b = append(b, '\n')
	err = writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: save %s: %w", path, err)
	}
	return nil
}

// LoadJSON reads the JSON at path into v.
func LoadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("checkpoint: load %s: %w", path, err)
	}
	return nil
}

// writeAtomic replaces path with what write produces. It writes a temporary
// file beside path (a rename is atomic only within one file system), syncs
// it so the rename cannot reach the disk before the data, renames it over
// path, and syncs the directory so the rename itself survives a crash. On
// any error before the rename, the temporary file is removed.
func writeAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	renamed = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be opened for syncing there; NTFS journals renames
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync directory: %w", err)
	}
	return d.Close()
}

// WriteFile writes data to path atomically: a crash leaves the old file or
// the new one, never a mix.
func WriteFile(path string, data []byte) error {
	err := writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return nil
}

// CheckWritableDir reports, before any work, whether a checkpoint could be
// written into dir: dir, or its nearest existing ancestor where it does not
// exist yet (a save creates it), must be a directory this process can
// create files in. Nothing is left behind.
func CheckWritableDir(dir string) error {
	at := dir
	for {
		fi, err := os.Stat(at)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("checkpoint: cannot write into %s: %s is not a directory", dir, at)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) { // ENOTDIR: a file on the way, found above
			return fmt.Errorf("checkpoint: cannot write into %s: %w", dir, err)
		}
		up := filepath.Dir(at)
		if up == at {
			return fmt.Errorf("checkpoint: cannot write into %s: no part of it exists", dir)
		}
		at = up
	}
	f, err := os.CreateTemp(at, ".vkamp-write-check-*")
	if err != nil {
		return fmt.Errorf("checkpoint: cannot write into %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
