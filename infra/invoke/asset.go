package main

import (
	"debug/buildinfo"
	"fmt"
	"path/filepath"
	"runtime"
)

// lambdaArch is the Go architecture of each Lambda architecture.
var lambdaArch = map[string]string{"arm64": "arm64", "x86_64": "amd64"}

// settingsThatMatter are the build settings a local stand-in for the
// asset must share with it (everything but the architecture).
var settingsThatMatter = []string{"-tags", "-trimpath", "-ldflags", "CGO_ENABLED", "GOOS"}

// bootstrap returns the executable to run for f here. The asset is built
// for the function's architecture (arm64 in AWS); when this machine
// cannot run it, the same main package's build for this machine is taken
// from binDir (`make build` writes bin/<function>/bootstrap), after
// checking from both binaries' Go build information that it is the same
// program built the same way.
func bootstrap(f *function, binDir string) (path, pkg string, err error) {
	asset := filepath.Join(f.AssetDir, "bootstrap")
	info, err := buildinfo.ReadFile(asset)
	if err != nil {
		return "", "", fmt.Errorf("%s: the asset %s is not a Go executable: %w", f.ID, asset, err)
	}
	arch := setting(info, "GOARCH")
	if len(f.Props.Architectures) == 1 && lambdaArch[f.Props.Architectures[0]] != arch {
		return "", "", fmt.Errorf("%s: the template says %s but its asset is built for %s", f.ID, f.Props.Architectures[0], arch)
	}
	if arch == runtime.GOARCH && setting(info, "GOOS") == runtime.GOOS {
		return asset, info.Path, nil
	}
	candidates, _ := filepath.Glob(filepath.Join(binDir, "*", "bootstrap"))
	for _, c := range candidates {
		local, err := buildinfo.ReadFile(c)
		if err != nil || local.Path != info.Path || setting(local, "GOARCH") != runtime.GOARCH {
			continue
		}
		same := true
		for _, k := range settingsThatMatter {
			same = same && setting(local, k) == setting(info, k)
		}
		if same {
			return c, info.Path, nil
		}
	}
	return "", "", fmt.Errorf("%s: its asset is built for %s and no build of %s for %s is in %s: run `make build`", f.ID, arch, info.Path, runtime.GOARCH, binDir)
}

func setting(info *buildinfo.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
