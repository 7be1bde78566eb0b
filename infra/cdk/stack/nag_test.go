package stack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/functions/turn/handler"
)

// suppressed are the cdk-nag findings suppressed on purpose, by rule and
// the construct path they apply to (each with a written reason beside it
// in the code). A new suppression has to be listed here, on purpose.
var suppressed = func() []string {
	list := []string{"AwsSolutions-IAM5 Alarm/AlarmFunctionRole/DefaultPolicy",
		"AwsSolutions-IAM5 Alarm/TracesToXRay", "AwsSolutions-IAM5 Reaper/TracesToXRay", "AwsSolutions-IAM5 RunEvents/TracesToXRay", "AwsSolutions-IAM5 Turn/TracesToXRay",
		"AwsSolutions-SMG4 Secrets/E2B_API_KEY",
		"AwsSolutions-SMG4 Secrets/LLM_API_KEY",
		"AwsSolutions-SQS3 Alarm/StreamFailures",
		"AwsSolutions-SQS3 Turn/DispatchFailures",
	}
	// Each public route of the handler (CDK names a route METHOD--path--with--dashes).
	for _, r := range handler.PublicRoutes {
		list = append(list, "AwsSolutions-APIG4 Api/HttpApi/"+strings.ReplaceAll(strings.Replace(r, " ", "", 1), "/", "--"))
	}
	slices.Sort(list)
	return list
}()

// TestNagClean: cdk-nag's AwsSolutions rules find nothing unsuppressed,
// and every suppression is one of the listed ones, with a reason.
func TestNagClean(t *testing.T) {
	for _, s := range []Settings{devSettings(), prodSettings()} {
		x := synth(t, s)
		ann := assertions.Annotations_FromStack(x.Stack.Stack)
		nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
		for _, m := range *ann.FindError(jsii.String("*"), nag) {
			raw, _ := json.Marshal(m)
			t.Errorf("%s: cdk-nag error: %s", s.Stage, raw)
		}
		for _, m := range *ann.FindWarning(jsii.String("*"), nag) {
			raw, _ := json.Marshal(m)
			t.Errorf("%s: cdk-nag warning: %s", s.Stage, raw)
		}
		var got []string
		for _, r := range x.json["Resources"].(map[string]any) {
			res := r.(map[string]any)
			md, _ := res["Metadata"].(map[string]any)
			nagMD, _ := md["cdk_nag"].(map[string]any)
			rules, _ := nagMD["rules_to_suppress"].([]any)
			path, _ := md["aws:cdk:path"].(string)
			path = strings.TrimSuffix(strings.TrimPrefix(path, Name(s.Stage)+"/"), "/Resource")
			for _, raw := range rules {
				rule := raw.(map[string]any)
				got = append(got, rule["id"].(string)+" "+path)
				if reason, _ := rule["reason"].(string); len(reason) < 40 {
					t.Errorf("%s at %s: the reason %q says too little", rule["id"], path, reason)
				}
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		// prod's broker secret is an existing one (by ARN): nothing to suppress.
		equal(t, s.Stage+" suppressions", got, suppressed)
	}
}
