package printers

import (
	"context"
	"reflect"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/registry/rest"
)

func TestFlowControlTables(t *testing.T) {
	withAge := func(meta *metav1.ObjectMeta) { meta.CreationTimestamp = ago(5 * time.Minute) }
	systemNodes := bootstrap.SuggestedFlowSchemaSystemNodes.DeepCopy()
	withAge(&systemNodes.ObjectMeta)
	systemNodes.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}
	exempt := bootstrap.MandatoryFlowSchemaExempt.DeepCopy()
	withAge(&exempt.ObjectMeta)
	system := bootstrap.SuggestedPriorityLevelConfigurationSystem.DeepCopy()
	withAge(&system.ObjectMeta)
	catchAll := bootstrap.MandatoryPriorityLevelConfigurationCatchAll.DeepCopy()
	withAge(&catchAll.ObjectMeta)
	exemptLevel := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
	withAge(&exemptLevel.ObjectMeta)
	fsColumns := []string{"Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"}
	plColumns := []string{"Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"}
	for _, tc := range []struct {
		name      string
		convertor rest.TableConvertor
		obj       runtime.Object
		columns   []string
		want      []any
	}{
		{"judged schema with a distinguisher", flowSchemas, systemNodes, fsColumns, []any{"system-nodes", "system", int64(500), "ByUser", "5m", "False"}},
		{"unjudged schema without one", flowSchemas, exempt, fsColumns, []any{"exempt", "exempt", int64(1), "<none>", "5m", "?"}},
		{"queuing level", priorityLevelConfigurations, system, plColumns, []any{"system", "Limited", int64(30), int64(64), int64(6), int64(50), "5m"}},
		{"rejecting level", priorityLevelConfigurations, catchAll, plColumns, []any{"catch-all", "Limited", int64(5), "<none>", "<none>", "<none>", "5m"}},
		{"exempt level", priorityLevelConfigurations, exemptLevel, plColumns, []any{"exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := frozen(tc.convertor).ConvertToTable(context.Background(), tc.obj, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if !reflect.DeepEqual(columns, tc.columns) {
				t.Errorf("columns = %v, want %v", columns, tc.columns)
			}
			if got := table.Rows[0].Cells; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cells = %#v, want %#v", got, tc.want)
			}
		})
	}
}
