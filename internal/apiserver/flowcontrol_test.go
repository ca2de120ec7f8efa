package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
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

	// The filter's config consumer writes the schema's status meanwhile: read, change, retry.
	change := func(write func(*flowcontrolv1.FlowSchema) (*flowcontrolv1.FlowSchema, error)) *flowcontrolv1.FlowSchema {
		t.Helper()
		var out *flowcontrolv1.FlowSchema
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := fc.FlowSchemas().Get(ctx, "batch-jobs", metav1.GetOptions{})
			if err != nil {
				return err
			}
			out, err = write(current)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	fs = change(func(fs *flowcontrolv1.FlowSchema) (*flowcontrolv1.FlowSchema, error) {
		fs.Spec.MatchingPrecedence = 900
		return fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{})
	})
	if fs.Generation != 2 {
		t.Fatalf("spec update: generation %d, want 2", fs.Generation)
	}
	fs = change(func(fs *flowcontrolv1.FlowSchema) (*flowcontrolv1.FlowSchema, error) {
		fs.Spec.MatchingPrecedence = 1
		fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Tested", Status: flowcontrolv1.ConditionTrue}}
		return fc.FlowSchemas().UpdateStatus(ctx, fs, metav1.UpdateOptions{})
	})
	if fs.Spec.MatchingPrecedence != 900 || fs.Generation != 2 || len(fs.Status.Conditions) != 1 || fs.Status.Conditions[0].Type != "Tested" {
		t.Fatalf("status update: %+v; want the spec kept and the condition written", fs)
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

// pfHeaders makes a request with cfg and returns the FlowSchema and priority level UIDs the
// server's priority and fairness filter matched it to ("" without the filter). The answer's code
// does not matter: the filter classifies before authorization.
func pfHeaders(t *testing.T, cfg *rest.Config, path string) (flowSchema, priorityLevel string) {
	t.Helper()
	resp := rawGet(t, cfg, path)
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
}

// TestPriorityAndFairness: by default the bootstrap configuration exists once the server is ready
// and requests are classified by it: a node's reads by system-nodes into the system level, an
// admin's (system:masters) by exempt.
func TestPriorityAndFairness(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	fc := s.client.FlowcontrolV1()
	// The producer's first round is a start-up hook: ready means done.
	uids := map[string]string{}
	for _, name := range []string{"system-nodes", "system-node-high", "exempt", "catch-all"} {
		fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("flow schema %s after start: %v", name, err)
		}
		if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("flow schema %s annotations %v, want autoupdate true", name, fs.Annotations)
		}
		uids["fs/"+name] = string(fs.UID)
	}
	for _, name := range []string{"system", "exempt", "catch-all"} {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("priority level %s after start: %v", name, err)
		}
		uids["pl/"+name] = string(pl.UID)
	}

	node := s.userConfig(t, "system:node:n1", "system:nodes")
	for _, tc := range []struct {
		who         string
		cfg         *rest.Config
		path        string
		schema, lvl string
	}{
		{"node reading a secret", node, "/api/v1/namespaces/default/secrets/nope", "fs/system-nodes", "pl/system"},
		{"admin", s.config, "/api/v1/namespaces/default/secrets/nope", "fs/exempt", "pl/exempt"},
	} {
		// The filter's config consumer follows the objects through informers: wait until it has.
		eventually(t, tc.who+" classified", func() error {
			fs, pl := pfHeaders(t, tc.cfg, tc.path)
			if fs != uids[tc.schema] || pl != uids[tc.lvl] {
				return fmt.Errorf("flow schema %q, priority level %q; want %s %q and %s %q", fs, pl, tc.schema, uids[tc.schema], tc.lvl, uids[tc.lvl])
			}
			return nil
		})
	}

	// The filter's config consumer judges every schema through /status (server-side apply):
	// kubectl's MISSINGPL column reads it.
	eventually(t, "system-nodes judged", func() error {
		fs, err := fc.FlowSchemas().Get(ctx, "system-nodes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v, want Dangling False", fs.Status.Conditions)
	})

	// A node may not change the configuration that ranks its own requests.
	nodeFC := flowcontrolclient.NewForConfigOrDie(node)
	if _, err := nodeFC.FlowSchemas().Create(ctx, batchSchema(), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node creating a flow schema: %v; want 403", err)
	}
	if err := nodeFC.FlowSchemas().Delete(ctx, "system-nodes", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node deleting system-nodes: %v; want 403", err)
	}

	// The filter's debug endpoint is there with the filter on.
	if code := getCode(t, s.config, "/debug/api_priority_and_fairness/dump_priority_levels"); code != http.StatusOK {
		t.Errorf("APF debug endpoint answered %d, want 200", code)
	}
}

// TestMaxInFlightWithoutPriorityAndFairness: --enable-priority-and-fairness=false serves with the
// flat max-in-flight limits: no request is classified; the configuration objects are still kept.
func TestMaxInFlightWithoutPriorityAndFairness(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) { o.FlowControl.EnablePriorityAndFairness = false })
	for _, cfg := range []*rest.Config{s.config, s.userConfig(t, "system:node:n1", "system:nodes")} {
		if fs, pl := pfHeaders(t, cfg, "/api/v1/namespaces/default/secrets/nope"); fs != "" || pl != "" {
			t.Errorf("request classified by flow schema %q, priority level %q without priority and fairness", fs, pl)
		}
	}
	if code := getCode(t, s.config, "/debug/api_priority_and_fairness/dump_priority_levels"); code != http.StatusNotFound {
		t.Errorf("APF debug endpoint answered %d, want 404", code)
	}
	if _, err := s.client.FlowcontrolV1().FlowSchemas().Get(context.Background(), "system-nodes", metav1.GetOptions{}); err != nil {
		t.Errorf("system-nodes without the filter: %v", err)
	}
}

func getCode(t *testing.T, cfg *rest.Config, path string) int {
	t.Helper()
	return rawGet(t, cfg, path).StatusCode
}

// rawGet GETs path with cfg's credentials and returns the answer, its body closed: for what the
// filters put in the status line and headers.
func rawGet(t *testing.T, cfg *rest.Config, path string) *http.Response {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestAPFConfigSurvivesRestart: an admin's edit of a suggested object with autoupdate "false"
// outlives a restart; one left to autoupdate "true" is put back by the restarted server.
func TestAPFConfigSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ts := startTestServer(t, dir, nil)
	// The server's priority and fairness controller writes the suggested objects' status as it
	// starts, so an edit, like any client's read-modify-write, retries on a conflict.
	edit := func(name, autoUpdate string, precedence int32) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fs, err := ts.client.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = autoUpdate
			fs.Spec.MatchingPrecedence = precedence
			_, err = ts.client.FlowcontrolV1().FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	edit("system-nodes", "false", 450)
	edit("global-default", "true", 9800)
	ts.stop()

	ts = startTestServer(t, dir, nil)
	for name, want := range map[string]struct {
		precedence int32
		autoUpdate string
	}{"system-nodes": {450, "false"}, "global-default": {9900, "true"}} {
		fs, err := ts.client.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fs.Spec.MatchingPrecedence != want.precedence || fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != want.autoUpdate {
			t.Errorf("%s after restart: precedence %d, autoupdate %q; want %d, %q", name, fs.Spec.MatchingPrecedence,
				fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey], want.precedence, want.autoUpdate)
		}
	}
}

// TestPriorityAndFairnessQueuesABurst: with a server concurrency of two, a burst of a node's
// requests waits its turn in the system level's queues instead of being refused with 429 (what a
// fleet starting at once met with the flat limits).
func TestPriorityAndFairnessQueuesABurst(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) {
		o.FlowControl.MaxRequestsInFlight, o.FlowControl.MaxMutatingRequestsInFlight = 1, 1
	})
	node := s.userConfig(t, "system:node:n1", "system:nodes")
	client, err := rest.HTTPClientFor(node)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the filter classifies by the stored configuration, not its start-up defaults.
	systemNodes, err := s.client.FlowcontrolV1().FlowSchemas().Get(context.Background(), "system-nodes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node classified", func() error {
		if fs, _ := pfHeaders(t, node, "/api/v1/namespaces/default/secrets/nope"); fs != string(systemNodes.UID) {
			return fmt.Errorf("flow schema %q, want system-nodes %q", fs, systemNodes.UID)
		}
		return nil
	})

	const burst = 40
	codes := make(chan int, burst)
	start := make(chan struct{})
	for range burst {
		go func() {
			<-start
			resp, err := client.Get(node.Host + "/api/v1/namespaces/default/secrets/nope")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	close(start)
	for range burst {
		// The node may not read the secret: 403 is the answer each request waited for.
		if code := <-codes; code != http.StatusForbidden {
			t.Errorf("request answered %d, want 403 after waiting its turn (429 would be a refusal)", code)
		}
	}
}
