package main

// The build cache: `go generate ./shaders` recompiles only the variants
// whose inputs changed. A variant's key hashes the toolchain's versions, its
// glslc arguments and the bytes of its source and of every file it
// includes, transitively; its entry is the shipped binary and the
// unoptimized one the names come from. Reflection and the checks run on
// every variant as before, cached or not. CI passes -full, which compiles
// everything and only writes the cache.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

type buildCache struct {
	dir     string // "" when off
	read    bool   // false with -full: compile everything
	toolsID string // the tools' --version outputs
}

func newBuildCache(dir string, full bool) (*buildCache, error) {
	c := &buildCache{dir: dir, read: !full}
	var id strings.Builder
	for _, t := range []string{"glslc", "spirv-val"} {
		out, err := exec.Command(t, "--version").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s --version: %v", t, err)
		}
		id.Write(out)
	}
	c.toolsID = id.String()
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.dir = "" // a cache that cannot be written is no cache, not an error
		}
	}
	return c, nil
}

var includeRE = regexp.MustCompile(`(?m)^\s*#\s*include\s+"([^"]+)"`)

// key hashes everything the variant's binaries depend on.
func (c *buildCache) key(dir string, v variant) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%q\x00", c.toolsID, glslcArgs(v, ""), glslcArgsOpt(v, "", "-O0"))
	files := map[string][]byte{}
	var walk func(path string) error
	walk = func(path string) error {
		if _, ok := files[path]; ok {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return err
		}
		files[path] = b
		for _, m := range includeRE.FindAllSubmatch(b, -1) {
			inc := filepath.Join("include", string(m[1]))
			if _, err := os.Stat(filepath.Join(dir, inc)); err != nil {
				inc = filepath.Join(filepath.Dir(path), string(m[1]))
			}
			if err := walk(inc); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(v.src); err != nil {
		return "", err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(files[p]))
		h.Write(files[p])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// get returns the cached binaries of key.
func (c *buildCache) get(key string) (spv, namesSPV []byte, ok bool) {
	if c.dir == "" || !c.read || key == "" {
		return nil, nil, false
	}
	spv, err1 := os.ReadFile(filepath.Join(c.dir, key+".spv"))
	namesSPV, err2 := os.ReadFile(filepath.Join(c.dir, key+".names.spv"))
	return spv, namesSPV, err1 == nil && err2 == nil
}

// put stores the binaries of key, each written whole before it is renamed
// into place, so that a reader never sees half of one.
func (c *buildCache) put(key string, spv, namesSPV []byte) {
	if c.dir == "" || key == "" {
		return
	}
	for name, b := range map[string][]byte{key + ".spv": spv, key + ".names.spv": namesSPV} {
		f, err := os.CreateTemp(c.dir, name+".*")
		if err != nil {
			return
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), filepath.Join(c.dir, name))
		}
		if err != nil {
			os.Remove(f.Name())
			return
		}
	}
}
