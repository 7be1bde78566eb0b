package local

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/commonly/runtime/shared/sandbox"
)

// allowAll is a seccomp program that allows everything: the baseline for
// the deny list's cost.
func allowAll() []byte {
	b := binary.NativeEndian.AppendUint16(nil, bpfRetK)
	b = append(b, 0, 0)
	return binary.NativeEndian.AppendUint32(b, seccompRetAllow)
}

// BenchmarkExecute is one run (a fresh bwrap, nsenter into the session's
// home, the interpreter's start) of a trivial program, and of one making
// 200,000 system calls: with the deny list, with an allow-all filter (the
// cost of any filter) and with none.
func BenchmarkExecute(b *testing.B) {
	for _, filter := range []string{"deny-list", "allow-all", "none"} {
		for _, c := range []struct {
			name string
			lang sandbox.Language
			code string
		}{
			{"python", sandbox.Python, "pass"},
			{"node", sandbox.JavaScript, "0"},
			{"python-200k-syscalls", sandbox.Python, "import os\nfor _ in range(200000): os.getppid()\n"},
		} {
			b.Run(filter+"/"+c.name, func(b *testing.B) {
				p := newProvider(b, Config{})
				switch filter {
				case "allow-all":
					p.seccomp = allowAll()
				case "none":
					p.seccomp = nil
				}
				s := create(b, p)
				for b.Loop() {
					if _, err := s.Execute(context.Background(), c.lang, c.code); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCreate is a session's set-up and tear-down: the slot, the
// mount point, the namespace holding its tmpfs.
func BenchmarkCreate(b *testing.B) {
	p := newProvider(b, Config{})
	create(b, p) // the probe and the host view, once
	for b.Loop() {
		s, err := p.Create(context.Background(), sandbox.Meta{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Kill(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostView is what the first Create pays to find what the
// interpreters load.
func BenchmarkHostView(b *testing.B) {
	p := newProvider(b, Config{})
	for b.Loop() {
		p.viewOnce = sync.Once{}
		p.hostView()
	}
}
