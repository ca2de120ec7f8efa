package apiserver

import (
	"context"
	"fmt"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func batchLevel() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
			},
		},
	}
}

func batchSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "batch-jobs"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "batch"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "batch"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}},
			}},
		},
	}
}

// TestFlowControlAPI: flowschemas and prioritylevelconfigurations are served at v1 with
// upstream's defaults, validation, generation and status endpoint; admins write them, nodes and
// other users may not.
func TestFlowControlAPI(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	fc := s.client.FlowcontrolV1()

	pl, err := fc.PriorityLevelConfigurations().Create(ctx, batchLevel(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating priority level: %v", err)
	}
	q := pl.Spec.Limited.LimitResponse.Queuing
	if *pl.Spec.Limited.NominalConcurrencyShares != 30 || *pl.Spec.Limited.LendablePercent != 0 || q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 || pl.Generation != 1 {
		t.Errorf("priority level not defaulted as upstream: %+v generation %d", pl.Spec.Limited, pl.Generation)
	}
	fs, err := fc.FlowSchemas().Create(ctx, batchSchema(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating flow schema: %v", err)
	}
	if fs.Spec.MatchingPrecedence != 1000 || fs.Generation != 1 {
		t.Errorf("flow schema: precedence %d generation %d, want 1000 and 1", fs.Spec.MatchingPrecedence, fs.Generation)
	}

	fs.Spec.MatchingPrecedence = 900
	if fs, err = fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{}); err != nil || fs.Generation != 2 {
		t.Fatalf("spec update: generation %v, err %v; want 2", fs.Generation, err)
	}
	fs.Spec.MatchingPrecedence = 1
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue}}
	fs, err = fc.FlowSchemas().UpdateStatus(ctx, fs, metav1.UpdateOptions{})
	if err != nil || fs.Spec.MatchingPrecedence != 900 || fs.Generation != 2 || len(fs.Status.Conditions) != 1 {
		t.Fatalf("status update: %+v, err %v; want the spec kept and the condition written", fs, err)
	}

	bad := batchSchema()
	bad.Name, bad.Spec.MatchingPrecedence = "bad", 1
	_, err = fc.FlowSchemas().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || err.Error() != `FlowSchema.flowcontrol.apiserver.k8s.io "bad" is invalid: spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1` {
		t.Errorf("precedence 1: %v; want 422 on spec.matchingPrecedence", err)
	}
	badLevel := batchLevel()
	badLevel.Name = "bad"
	badLevel.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, badLevel, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("hand larger than the deck: %v; want 422", err)
	}

	for _, who := range []struct{ name, user, group string }{
		{"node", "system:node:n1", "system:nodes"},
		{"user", "alice", "devs"},
	} {
		c := s.user(t, who.user, who.group).FlowcontrolV1()
		mine := batchSchema()
		mine.Name = "mine"
		if _, err := c.FlowSchemas().Create(ctx, mine, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s creating a flow schema: %v; want 403", who.name, err)
		}
		fs.Spec.MatchingPrecedence = 2
		if _, err := c.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s updating a flow schema: %v; want 403", who.name, err)
		}
		if _, err := c.FlowSchemas().UpdateStatus(ctx, fs, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s writing a flow schema's status: %v; want 403", who.name, err)
		}
		pl.Spec.Limited.NominalConcurrencyShares = ptr[int32](1000)
		if _, err := c.PriorityLevelConfigurations().Update(ctx, pl, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s updating a priority level: %v; want 403", who.name, err)
		}
		if err := c.PriorityLevelConfigurations().Delete(ctx, "batch", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s deleting a priority level: %v; want 403", who.name, err)
		}
	}

	table := &metav1.Table{}
	err = s.client.FlowcontrolV1().RESTClient().Get().Resource("prioritylevelconfigurations").Name("batch").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if want := "[Name Type NominalConcurrencyShares Queues HandSize QueueLengthLimit Age]"; len(table.Rows) != 1 || fmt.Sprint(columns) != want {
		t.Errorf("table columns %v, %d rows; want %s and one row", columns, len(table.Rows), want)
	}
}
