// Package chromiumtest starts Debian's headless Chromium for the tests
// that open a page as a person would (the usage report, the local
// console), one way: a fresh profile, no sandbox (root in a container),
// no GPU, and nothing of its own on the network (no background
// networking, component updates, sync or QUIC).
package chromiumtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// New starts Chromium with a window of width × height and returns a
// chromedp context on a new tab, ended with the test (or after timeout).
// A machine without chromium fails the test: `make report-deps` installs
// Debian's, and `make test` depends on it.
func New(t testing.TB, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH: `make report-deps` installs Debian's")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(width, height),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelT)
	return ctx
}
