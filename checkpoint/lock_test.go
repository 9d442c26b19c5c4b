package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockHelperProcess is not a test: run by TestLockProcesses as a second
// process, it locks the directory CHECKPOINT_TEST_LOCK_HELPER names, says "locked",
// and unlocks when its stdin closes.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv("CHECKPOINT_TEST_LOCK_HELPER")
	if dir == "" {
		return
	}
	l, err := LockDir(dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	if err := l.Unlock(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// lockHolder is a second process holding the lock of a directory.
type lockHolder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHolder(t *testing.T, dir string) *lockHolder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "CHECKPOINT_TEST_LOCK_HELPER="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &lockHolder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.cmd.Process.Kill(); h.cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("the second process said %q (%v)", line, err)
	}
	return h
}

// TestLockProcesses: a second process holding a directory's lock makes
// LockDir fail with an error naming its pid and host; once it unlocks, or
// dies holding it, the lock is taken.
func TestLockProcesses(t *testing.T) {
	if !flocked {
		t.Skip("without flock a killed holder leaves a lock that LockDir cannot tell from a live one")
	}
	dir := t.TempDir()
	host, _ := os.Hostname()
	h := startHolder(t, dir)
	_, err := LockDir(dir)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("lock held by another process: %v, want a *LockedError", err)
	}
	t.Logf("held: %v", err)
	if le.PID != h.cmd.Process.Pid || le.Host != host || le.Path != filepath.Join(dir, "LOCK") || time.Since(le.Since) > time.Minute {
		t.Errorf("locked by %+v, want pid %d on %s", le, h.cmd.Process.Pid, host)
	}
	want := fmt.Sprintf("checkpoint: %s is held by pid %d on host %s since ", le.Path, le.PID, host)
	if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "another process is saving a checkpoint into this directory") {
		t.Errorf("message %q", msg)
	}

	// It unlocks: the lock file is gone, and the lock is free.
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("second process: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LOCK after an unlock: %v", err)
	}
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}

	// It dies holding the lock: its LOCK file stays, naming a dead pid,
	// and is taken over.
	h = startHolder(t, dir)
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	stale, err := os.ReadFile(filepath.Join(dir, "LOCK"))
	if err != nil || !strings.Contains(string(stale), fmt.Sprint(h.cmd.Process.Pid)) {
		t.Fatalf("the killed holder's LOCK holds %q (%v)", stale, err)
	}
	l, err = LockDir(dir)
	if err != nil {
		t.Fatalf("stale lock of a dead process: %v", err)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "LOCK")); !strings.Contains(string(now), fmt.Sprintf("pid %d\n", os.Getpid())) {
		t.Errorf("LOCK taken over holds %q", now)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestLockInProcess: the lock belongs to a Lock, not to the process: a
// second LockDir in the same process fails until the first unlocks.
// Unlock is idempotent and safe on nil.
func TestLockInProcess(t *testing.T) {
	dir := t.TempDir()
	a, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if _, err := LockDir(dir); !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Errorf("second lock in one process: %v", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	if err := (*Lock)(nil).Unlock(); err != nil {
		t.Errorf("nil Unlock: %v", err)
	}
	b, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b.Unlock()

	if !flocked {
		return // a stale LOCK is removed by hand there
	}
	// Garbage in a LOCK nobody holds is a stale lock like any other.
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), []byte("\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Unlock()
	if _, err := LockDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock of a missing directory: %v", err)
	}
}
