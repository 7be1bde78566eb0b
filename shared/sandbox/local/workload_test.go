package local

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// TestInterpreterWorkloads runs what data-analysis code does with each
// interpreter's standard library (threads, processes, shared memory,
// sqlite, compression, wasm, timers), under the seccomp filter
// and in the minimal view: it all works.
func TestInterpreterWorkloads(t *testing.T) {
	s := newSession(t, Config{})
	py := run(t, s, sandbox.Python, `
import asyncio, bz2, concurrent.futures, ctypes, decimal, hashlib, lzma, mmap, multiprocessing, os
import sqlite3, ssl, subprocess, sys, tempfile, uuid, zlib, zoneinfo
from multiprocessing import shared_memory
db = sqlite3.connect(":memory:"); db.execute("create table t(x)"); db.execute("insert into t values (41)")
print("sqlite", db.execute("select x + 1 from t").fetchone()[0])
with concurrent.futures.ThreadPoolExecutor(4) as ex: print("threads", sum(ex.map(abs, [-1, -2, -3])))
with multiprocessing.Pool(2) as p: print("processes", sum(p.map(abs, [-1, -2, -3])))
sm = shared_memory.SharedMemory(create=True, size=1 << 20); sm.buf[0] = 7; print("shm", sm.buf[0]); sm.close(); sm.unlink()
print("subprocess", subprocess.run([sys.executable, "-c", "print(6*7)"], capture_output=True, text=True).stdout.strip())
m = mmap.mmap(-1, 1 << 20); m[:2] = b"ok"; print("mmap", m[:2].decode())
print("codecs", len(lzma.compress(b"x" * 1000)) > 0, len(bz2.compress(b"x")) > 0, zlib.crc32(b"x"))
print("asyncio", asyncio.run(asyncio.sleep(0, result="done")))
print("zoneinfo", zoneinfo.ZoneInfo("Europe/Paris").key)
with tempfile.TemporaryDirectory() as d: print("tempdir", d.startswith("/tmp/"))
print("ctypes", ctypes.CDLL(None).getpid() == os.getpid(), ssl.OPENSSL_VERSION.split()[0], uuid.uuid4().version)
`)
	js := run(t, s, sandbox.JavaScript, `
const cp = require('child_process'), crypto = require('crypto'), fs = require('fs'), zlib = require('zlib');
console.log('child', cp.spawnSync(process.execPath, ['-e', 'console.log(6*7)']).stdout.toString().trim());
console.log('crypto', crypto.createHash('sha256').update('x').digest('hex').slice(0, 8));
fs.writeFileSync('/tmp/x', 'y'); console.log('fs', fs.readFileSync('/tmp/x', 'utf8'));
console.log('zlib', zlib.gunzipSync(zlib.gzipSync('abc')).toString());
console.log('wasm', WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])));
console.log('intl', new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).format(new Date(0)));
setTimeout(() => fs.promises.readFile('/tmp/x', 'utf8').then(s => console.log('async', s)), 1);
`)
	for _, c := range []struct {
		got  sandbox.Execution
		want []string
	}{
		{py, []string{"sqlite 42", "threads 6", "processes 6", "shm 7", "subprocess 42", "mmap ok", "codecs True True", "asyncio done", "zoneinfo Europe/Paris", "tempdir True", "ctypes True"}},
		{js, []string{"child 42", "crypto 2d711642", "fs y", "zlib abc", "wasm true", "intl 1/1/1970", "async y"}},
	} {
		if c.got.Error != nil || c.got.Stderr != "" {
			t.Errorf("error %+v, stderr %q", c.got.Error, c.got.Stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(c.got.Stdout, w+"\n") && !strings.Contains(c.got.Stdout, w+" ") {
				t.Errorf("stdout lacks %q:\n%s", w, c.got.Stdout)
			}
		}
	}
}
