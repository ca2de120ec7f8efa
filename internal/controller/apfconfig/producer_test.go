package apfconfig

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const autoUpdate = flowcontrolv1.AutoUpdateAnnotationKey

// stored is a bootstrap object as a cluster holds it: with a generation and the given annotation
// ("" for none), its spec changed by edit when set.
func storedSchema(base *flowcontrolv1.FlowSchema, generation int64, annotation string, edit func(*flowcontrolv1.FlowSchemaSpec)) *flowcontrolv1.FlowSchema {
	fs := base.DeepCopy()
	fs.Generation, fs.Annotations = generation, nil
	if annotation != "" {
		fs.Annotations = map[string]string{autoUpdate: annotation}
	}
	if edit != nil {
		edit(&fs.Spec)
	}
	return fs
}

func storedLevel(base *flowcontrolv1.PriorityLevelConfiguration, generation int64, annotation string, edit func(*flowcontrolv1.PriorityLevelConfigurationSpec)) *flowcontrolv1.PriorityLevelConfiguration {
	pl := base.DeepCopy()
	pl.Generation, pl.Annotations = generation, nil
	if annotation != "" {
		pl.Annotations = map[string]string{autoUpdate: annotation}
	}
	if edit != nil {
		edit(&pl.Spec)
	}
	return pl
}

func precedence(p int32) func(*flowcontrolv1.FlowSchemaSpec) {
	return func(s *flowcontrolv1.FlowSchemaSpec) { s.MatchingPrecedence = p }
}

func TestEnsure(t *testing.T) {
	systemNodes, catchAll := bootstrap.SuggestedFlowSchemaSystemNodes, bootstrap.MandatoryFlowSchemaCatchAll
	for _, tc := range []struct {
		name   string
		stored []runtime.Object
		// wantSchema and wantLevel are what must be stored after a round, by name: the spec's
		// precedence (schemas) or shares (levels) and the annotation; absent means deleted.
		wantSchemas map[string]schemaWant
		wantLevels  map[string]levelWant
	}{
		{
			name:        "empty cluster: everything created, annotated as the server's",
			wantSchemas: map[string]schemaWant{"system-nodes": {500, "true"}, "exempt": {1, "true"}, "catch-all": {10000, "true"}, "global-default": {9900, "true"}},
			wantLevels:  map[string]levelWant{"system": {30, "true"}, "catch-all": {5, "true"}, "exempt": {-1, "true"}},
		},
		{
			name:        "admin's edit of a suggested schema with autoupdate false is kept",
			stored:      []runtime.Object{storedSchema(systemNodes, 2, "false", precedence(400))},
			wantSchemas: map[string]schemaWant{"system-nodes": {400, "false"}},
		},
		{
			name:        "with autoupdate true the suggested spec is put back",
			stored:      []runtime.Object{storedSchema(systemNodes, 2, "true", precedence(400))},
			wantSchemas: map[string]schemaWant{"system-nodes": {500, "true"}},
		},
		{
			name:        "no annotation, never edited (generation 1): the server's, put back and annotated true",
			stored:      []runtime.Object{storedSchema(systemNodes, 1, "", precedence(400))},
			wantSchemas: map[string]schemaWant{"system-nodes": {500, "true"}},
		},
		{
			name:        "no annotation, edited (generation 2): the admin's, kept and annotated false",
			stored:      []runtime.Object{storedSchema(systemNodes, 2, "", precedence(400))},
			wantSchemas: map[string]schemaWant{"system-nodes": {400, "false"}},
		},
		{
			name:        "an annotation that is no boolean counts as missing",
			stored:      []runtime.Object{storedSchema(systemNodes, 3, "maybe", precedence(400))},
			wantSchemas: map[string]schemaWant{"system-nodes": {400, "false"}},
		},
		{
			name:        "a mandatory schema is always put back and annotated true",
			stored:      []runtime.Object{storedSchema(catchAll, 5, "false", precedence(9000))},
			wantSchemas: map[string]schemaWant{"catch-all": {10000, "true"}},
		},
		{
			name: "a mandatory level is put back; exempt keeps the admin's shares",
			stored: []runtime.Object{
				storedLevel(bootstrap.MandatoryPriorityLevelConfigurationCatchAll, 2, "false", func(s *flowcontrolv1.PriorityLevelConfigurationSpec) {
					s.Limited.NominalConcurrencyShares = ptr.To[int32](50)
				}),
				storedLevel(bootstrap.MandatoryPriorityLevelConfigurationExempt, 2, "true", func(s *flowcontrolv1.PriorityLevelConfigurationSpec) {
					s.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
				}),
			},
			wantLevels: map[string]levelWant{"catch-all": {5, "true"}, "exempt": {10, "true"}},
		},
		{
			name: "objects bootstrap dropped: deleted only when annotated true",
			stored: []runtime.Object{
				storedSchema(systemNodes, 1, "true", nil).DeepCopyObject(),
				renamed(storedSchema(systemNodes, 1, "true", nil), "retired"),
				renamed(storedSchema(systemNodes, 4, "false", nil), "retired-but-edited"),
				renamed(storedSchema(systemNodes, 1, "", nil), "admins-own"),
			},
			wantSchemas: map[string]schemaWant{"system-nodes": {500, "true"}, "retired": {}, "retired-but-edited": {500, "false"}, "admins-own": {500, ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.stored...)
			if err := New(client.FlowcontrolV1()).Ensure(context.Background()); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			checkSchemas(t, client, tc.wantSchemas)
			checkLevels(t, client, tc.wantLevels)
			// Every bootstrap object exists afterwards.
			for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
				if _, err := client.FlowcontrolV1().FlowSchemas().Get(context.Background(), fs.Name, metav1.GetOptions{}); err != nil {
					t.Errorf("flow schema %s: %v", fs.Name, err)
				}
			}
			for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
				if _, err := client.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), pl.Name, metav1.GetOptions{}); err != nil {
					t.Errorf("priority level %s: %v", pl.Name, err)
				}
			}
			// A second round changes nothing: the producer converges.
			before := len(client.Actions())
			if err := New(client.FlowcontrolV1()).Ensure(context.Background()); err != nil {
				t.Fatalf("second Ensure: %v", err)
			}
			for _, a := range client.Actions()[before:] {
				if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("second round wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

type schemaWant struct {
	precedence int32
	annotation string
}

type levelWant struct {
	shares     int32 // -1: exempt's default, nil shares are not expected
	annotation string
}

func renamed(fs *flowcontrolv1.FlowSchema, name string) *flowcontrolv1.FlowSchema {
	fs.Name = name
	return fs
}

func checkSchemas(t *testing.T, client *fake.Clientset, want map[string]schemaWant) {
	t.Helper()
	for name, w := range want {
		fs, err := client.FlowcontrolV1().FlowSchemas().Get(context.Background(), name, metav1.GetOptions{})
		if w == (schemaWant{}) {
			if !apierrors.IsNotFound(err) {
				t.Errorf("flow schema %s: %v, want it deleted", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("flow schema %s: %v", name, err)
			continue
		}
		if fs.Spec.MatchingPrecedence != w.precedence || fs.Annotations[autoUpdate] != w.annotation {
			t.Errorf("flow schema %s: precedence %d, autoupdate %q; want %d, %q", name, fs.Spec.MatchingPrecedence, fs.Annotations[autoUpdate], w.precedence, w.annotation)
		}
	}
}

func checkLevels(t *testing.T, client *fake.Clientset, want map[string]levelWant) {
	t.Helper()
	for name, w := range want {
		pl, err := client.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("priority level %s: %v", name, err)
			continue
		}
		var shares *int32
		switch {
		case pl.Spec.Limited != nil:
			shares = pl.Spec.Limited.NominalConcurrencyShares
		case pl.Spec.Exempt != nil:
			shares = pl.Spec.Exempt.NominalConcurrencyShares
		}
		wantShares := w.shares
		if wantShares == -1 {
			wantShares = 0
		}
		if ptr.Deref(shares, -2) != wantShares || pl.Annotations[autoUpdate] != w.annotation {
			t.Errorf("priority level %s: shares %v, autoupdate %q; want %d, %q", name, ptr.Deref(shares, -2), pl.Annotations[autoUpdate], wantShares, w.annotation)
		}
	}
}

// TestEnsureRacingReplica: another replica's write between the producer's read and its write
// (a conflict on update, an existing object on create) makes the producer read again and judge
// what the other wrote, instead of failing the round.
func TestEnsureRacingReplica(t *testing.T) {
	edited := storedSchema(bootstrap.SuggestedFlowSchemaSystemNodes, 1, "true", precedence(400))
	client := fake.NewClientset(edited)
	var conflicts, duplicates atomic.Int32
	client.PrependReactor("update", "flowschemas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}, "system-nodes", nil)
		}
		return false, nil, nil
	})
	client.PrependReactor("create", "prioritylevelconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pl := a.(k8stesting.CreateAction).GetObject().(*flowcontrolv1.PriorityLevelConfiguration)
		if pl.Name != "system" || duplicates.Add(1) != 1 {
			return false, nil, nil
		}
		// The other replica's create lands first.
		if err := client.Tracker().Add(pl.DeepCopy()); err != nil {
			t.Error(err)
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "prioritylevelconfigurations"}, pl.Name)
	})
	if err := New(client.FlowcontrolV1()).Ensure(context.Background()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if conflicts.Load() < 2 || duplicates.Load() < 1 {
		t.Fatalf("conflicts %d, duplicates %d: the race was not exercised", conflicts.Load(), duplicates.Load())
	}
	checkSchemas(t, client, map[string]schemaWant{"system-nodes": {500, "true"}})
	pl, err := client.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), "system", metav1.GetOptions{})
	if err != nil || !apiequality.Semantic.DeepEqual(pl.Spec, bootstrap.SuggestedPriorityLevelConfigurationSystem.Spec) {
		t.Errorf("system level after a racing create: %v, %v", pl, err)
	}
}

// TestEnsureGivesUpOnEndlessConflicts: a round that keeps losing fails with a clear error
// rather than spinning; the next round tries again.
func TestEnsureGivesUpOnEndlessConflicts(t *testing.T) {
	client := fake.NewClientset(storedSchema(bootstrap.SuggestedFlowSchemaSystemNodes, 1, "true", precedence(400)))
	client.PrependReactor("update", "flowschemas", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}, "system-nodes", nil)
	})
	err := New(client.FlowcontrolV1()).Ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), `ensuring flow schema "system-nodes": still conflicting after 5 attempts`) {
		t.Fatalf("Ensure: %v", err)
	}
}
