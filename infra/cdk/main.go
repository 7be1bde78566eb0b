// Command cdk is the CDK app of the Commonly hosted runtime: `cdk synth`
// and `cdk deploy` run it through cdk.json at the repository's root.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/infra/cdk/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stage, _ := app.Node().TryGetContext(jsii.String("stage")).(string)
	root, err := os.Getwd() // cdk runs the app from the repository's root
	if err != nil {
		fail(err)
	}
	s, err := stack.LoadSettings(stage, app.Node().TryGetContext(jsii.String("stages")), root)
	if err != nil {
		fail(err)
	}
	if _, err := stack.New(app, s); err != nil {
		fail(err)
	}
	// Said before anything deploys (the CLI prints the stack's warnings
	// too, after synthesis).
	for _, w := range s.Warnings() {
		fmt.Fprintln(os.Stderr, "cdk app: warning:", w)
	}
	stack.Check(app)
	app.Synth(nil)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cdk app:", err)
	os.Exit(1)
}
