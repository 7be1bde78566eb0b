package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The spend alarm's event on the bus (the alarm function's issue):
// consumers match on these.
const (
	EventSource          = "commonly.hosted-runtime"
	SpendAlarmDetailType = "SpendAlarmRaised"
)

// Events is the runtime's event bus, the ops topic, and the rule that
// tells ops of every spend alarm.
type Events struct {
	Bus      awsevents.EventBus
	OpsTopic awssns.Topic
	// SpendAlarms sends SpendAlarmRaised events to OpsTopic.
	SpendAlarms awsevents.Rule
}

func newEvents(scope constructs.Construct, s *Settings) *Events {
	c := constructs.NewConstruct(scope, jsii.String("Events"))
	// Spend alarms name users: the topic is encrypted with a key of our
	// own, which EventBridge and CloudWatch (both publish here) may use.
	key := awskms.NewKey(c, jsii.String("OpsTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Encrypts the Commonly hosted runtime's ops topic (" + s.Stage + ")"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	for _, svc := range []string{"events.amazonaws.com", "cloudwatch.amazonaws.com"} {
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(svc), nil)},
			Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
			Resources:  jsii.Strings("*"), // in a key policy, "*" is this key
		}), nil)
	}
	e := &Events{
		Bus: awsevents.NewEventBus(c, jsii.String("Bus"), &awsevents.EventBusProps{
			Description: jsii.String("Commonly hosted runtime events (" + s.Stage + ")"),
		}),
		OpsTopic: awssns.NewTopic(c, jsii.String("OpsTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Commonly hosted runtime ops (" + s.Stage + ")"),
			MasterKey:   key,
			EnforceSSL:  jsii.Bool(true),
		}),
	}
	e.SpendAlarms = awsevents.NewRule(c, jsii.String("SpendAlarmRaised"), &awsevents.RuleProps{
		Description: jsii.String("Every spend alarm to the ops topic"),
		EventBus:    e.Bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(EventSource),
			DetailType: jsii.Strings(SpendAlarmDetailType),
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSnsTopic(e.OpsTopic, nil)},
	})
	if s.AlarmEmail != "" {
		e.OpsTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.AlarmEmail), nil))
	}
	return e
}
