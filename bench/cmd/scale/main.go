// Command scale is `make scale`: the scale and cost model (bench/scale)
// from bench/scale/inputs.json, bench/scale/measured.json and cdk.json,
// printed and written into docs/scale.md between its markers.
//
//	go run ./bench/cmd/scale [-doc docs/scale.md] [-print]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/commonly/runtime/bench/scale"
	"github.com/commonly/runtime/shared/tablekeys"
)

func main() {
	dir := flag.String("dir", "bench/scale", "the folder of inputs.json and measured.json")
	cdk := flag.String("cdk", "cdk.json", "the CDK app's cdk.json (the stage's settings)")
	doc := flag.String("doc", "docs/scale.md", "the document whose generated part is rewritten")
	only := flag.Bool("print", false, "print the table only; leave the document alone")
	flag.Parse()
	if err := run(*dir, *cdk, *doc, *only); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(dir, cdk, doc string, only bool) error {
	m, err := scale.Load(dir, cdk, tablekeys.DefaultIndexShards)
	if err != nil {
		return err
	}
	gen := m.Render()
	fmt.Print(gen)
	if only {
		return nil
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := scale.Splice(string(old), gen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "scale: %s written\n", doc)
	return nil
}
