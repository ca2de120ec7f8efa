package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"
)

func TestFlowSchema(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want flowcontrolv1.FlowSchemaSpec
	}{
		{"no precedence gets 1000", flowcontrolv1.FlowSchemaSpec{}, flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 1000}},
		{"a precedence is kept", flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 7}, flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &flowcontrolv1.FlowSchema{Spec: tc.in}
			FlowSchema(fs)
			if diff := cmp.Diff(tc.want, fs.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPriorityLevelConfiguration(t *testing.T) {
	queue := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}
	for _, tc := range []struct {
		name     string
		in, want flowcontrolv1.PriorityLevelConfigurationSpec
	}{
		{
			name: "exempt: nothing nominal, nothing lent",
			in:   flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{}},
			want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0),
			}},
		},
		{
			name: "limited and queuing: 30 shares, 64 queues, hands of 8, 50 per queue",
			in:   flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: queue}},
			want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](30), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
					Queues: 64, HandSize: 8, QueueLengthLimit: 50,
				}},
			}},
		},
		{
			name: "v1 keeps an explicit zero share and given values",
			in: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](25),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			}},
			want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](25),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: tc.in}
			PriorityLevelConfiguration(pl)
			if diff := cmp.Diff(tc.want, pl.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBootstrapConfigurationIsDefaulted: the objects the server creates at start-up are already
// in defaulted form, so the config producer's comparison with what it reads back is exact.
func TestBootstrapConfigurationIsDefaulted(t *testing.T) {
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		got := pl.DeepCopy()
		PriorityLevelConfiguration(got)
		if diff := cmp.Diff(pl.Spec, got.Spec); diff != "" {
			t.Errorf("priority level %s changed by defaulting (-bootstrap +defaulted):\n%s", pl.Name, diff)
		}
	}
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		got := fs.DeepCopy()
		FlowSchema(got)
		if diff := cmp.Diff(fs.Spec, got.Spec); diff != "" {
			t.Errorf("flow schema %s changed by defaulting (-bootstrap +defaulted):\n%s", fs.Name, diff)
		}
	}
}
