package runcode_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/sandbox/local"
	"github.com/commonly/runtime/shared/tools/runcode"
)

// TestLocalSandboxRunsPython runs the tool end to end on the embedded
// bubblewrap sandbox, the default when no E2B key is configured.
func TestLocalSandboxRunsPython(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap): the local sandbox cannot be tested")
	}
	base, err := os.MkdirTemp("", "commonly-runcode-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o711); err != nil { // traversable by the sandbox's uid
		t.Fatal(err)
	}
	l := &ledger{}
	fac, err := runcode.NewFactory(runcode.Config{Provider: local.New(local.Config{BaseDir: base}), Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	tool := fac.New()
	defer tool.Close(context.Background())

	code := "import statistics\nxs = [3, 1, 4, 1, 5, 9, 2, 6]\nprint(statistics.median(xs), sum(xs))\nopen('note.txt', 'w').write('kept')\n"
	args, _ := json.Marshal(map[string]string{"language": "python", "code": code})
	r := tool.Call(context.Background(), env, args)
	out := output(t, r)
	if out.Stdout != "3.5 31\n" || out.Exception != nil {
		t.Fatalf("output = %+v", out)
	}
	if r.CodeRun.ExitKind != "ok" || !strings.HasPrefix(r.CodeRun.SandboxID, "local-") || len(l.created) != 1 ||
		l.created[0].Provider != "local" {
		t.Errorf("CodeRun %+v, records %+v", r.CodeRun, l.created)
	}

	// Same sandbox: the file is still there.
	args, _ = json.Marshal(map[string]string{"language": "javascript", "code": "console.log(require('fs').readFileSync('note.txt', 'utf8'))"})
	if out := output(t, tool.Call(context.Background(), env, args)); out.Stdout != "kept\n" {
		t.Errorf("second run: %+v", out)
	}

	if err := tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 || len(l.killed) != 1 {
		t.Errorf("after Close: %d session directories, %d recorded kills", len(entries), len(l.killed))
	}
}
