// Package devtest opens the Vulkan device that tests run on. Without Vulkan
// a test is skipped with the reason, unless CI is set: then it fails, so a CI
// machine that lost its driver cannot pass by skipping.
package devtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/vk"
)

// Open opens the test device (VKAMP_DEVICE and VKAMP_TIER apply) and closes
// it when the test ends. When validation is on, any message the layer gave
// during the test fails it.
func Open(t testing.TB, opts ...vk.Options) *vk.Device {
	t.Helper()
	var o vk.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.PipelineCacheDir == "" {
		o.PipelineCacheDir = "off"
	}
	d, err := vk.Open(o)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Vulkan device in CI: %v", err)
		}
		t.Skipf("no Vulkan device: %v", err)
	}
	CheckValidation(t) // messages from earlier tests belong to them
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close device: %v", err)
		}
		CheckValidation(t)
	})
	return d
}

// CheckValidation fails t with every message the validation layer reported
// since the last check.
func CheckValidation(t testing.TB) {
	t.Helper()
	if msgs := vk.ValidationMessages(); len(msgs) > 0 {
		t.Errorf("validation layer reported %d messages:\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
}

// Self returns a command that runs this test binary again with args, the
// way this one was started: a binary run through another loader
// (scripts/install-lavapipe-current.sh's wrapper, which names itself in
// LAVAPIPE_CURRENT_RUN) runs through it again, or its child would find no
// driver.
func Self(args ...string) *exec.Cmd {
	if run := os.Getenv("LAVAPIPE_CURRENT_RUN"); run != "" {
		return exec.Command(run, append([]string{os.Args[0]}, args...)...)
	}
	return exec.Command(os.Args[0], args...)
}
