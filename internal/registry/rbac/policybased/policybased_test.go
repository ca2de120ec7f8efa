package policybased

import (
	"context"
	"errors"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/store"
)

// fakeWriter stands in for the etcd store: it keeps one object and applies updates to it the way
// the real store does, through the UpdatedObjectInfo.
type fakeWriter struct {
	stored *rbacv1.Role
	writes int
}

func (w *fakeWriter) New() runtime.Object { return &rbacv1.Role{} }

func (w *fakeWriter) Create(_ context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	w.writes++
	w.stored = obj.(*rbacv1.Role)
	return obj, nil
}

func (w *fakeWriter) Update(ctx context.Context, _ string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, err := objInfo.UpdatedObject(ctx, w.stored)
	if err != nil {
		return nil, false, err
	}
	w.writes++
	w.stored = obj.(*rbacv1.Role)
	return obj, false, nil
}

// recordingCheck refuses with err and remembers what it was asked about.
type recordingCheck struct {
	err      error
	calls    int
	gotOld   *rbacv1.Role
	gotRules []rbacv1.PolicyRule
}

func (c *recordingCheck) check(_ context.Context, obj, old *rbacv1.Role) error {
	c.calls++
	c.gotOld = old
	c.gotRules = obj.Rules
	return c.err
}

func guarded(w *fakeWriter, c *recordingCheck) *Store[*rbacv1.Role] {
	s := &store.Store{Store: &genericregistry.Store{DefaultQualifiedResource: rbacv1.Resource("roles")}}
	return &Store[*rbacv1.Role]{Store: s, writes: w, check: c.check}
}

var (
	errNotHeld = errors.New("permissions not held")
	podRules   = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
)

func storedRole() *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "team-a", ResourceVersion: "4"}, Rules: podRules}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name      string
		obj       runtime.Object
		checkErr  error
		wantCheck bool
		wantWrite bool
		wantErr   func(error) bool
		wantMsg   string
	}{
		{name: "allowed", obj: storedRole(), wantCheck: true, wantWrite: true},
		{
			name: "refused", obj: storedRole(), checkErr: errNotHeld, wantCheck: true,
			wantErr: apierrors.IsForbidden, wantMsg: `roles.rbac.authorization.k8s.io "reader" is forbidden: permissions not held`,
		},
		{
			name: "status from the check kept", obj: storedRole(), checkErr: apierrors.NewNotFound(rbacv1.Resource("clusterroles"), "gone"), wantCheck: true,
			wantErr: apierrors.IsNotFound,
		},
		{name: "wrong type", obj: &rbacv1.ClusterRole{}, wantErr: apierrors.IsBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, c := &fakeWriter{}, &recordingCheck{err: tc.checkErr}
			_, err := guarded(w, c).Create(context.Background(), tc.obj, nil, &metav1.CreateOptions{})
			if (c.calls > 0) != tc.wantCheck || (w.writes > 0) != tc.wantWrite {
				t.Errorf("checked %d times, wrote %d times; want check %v, write %v", c.calls, w.writes, tc.wantCheck, tc.wantWrite)
			}
			if tc.wantCheck && c.gotOld != nil {
				t.Errorf("check got old object %v on create, want nil", c.gotOld)
			}
			if (tc.wantErr == nil && err != nil) || (tc.wantErr != nil && !tc.wantErr(err)) {
				t.Fatalf("error = %v", err)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("message = %q, want %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*rbacv1.Role)
		checkErr  error
		wantCheck bool
		wantErr   func(error) bool
		wantMsg   string
	}{
		{name: "allowed rules change", mutate: func(r *rbacv1.Role) { r.Rules = nil }, wantCheck: true},
		{
			name: "refused rules change", mutate: func(r *rbacv1.Role) { r.Rules = append(r.Rules, podRules...) }, checkErr: errNotHeld, wantCheck: true,
			wantErr: apierrors.IsForbidden, wantMsg: `roles.rbac.authorization.k8s.io "reader" is forbidden: permissions not held`,
		},
		{
			// As upstream, any change but the garbage collector's is checked.
			name: "refused label change", mutate: func(r *rbacv1.Role) { r.Labels = map[string]string{"a": "b"} }, checkErr: errNotHeld, wantCheck: true,
			wantErr: apierrors.IsForbidden,
		},
		{
			name: "garbage collector fields", checkErr: errNotHeld,
			mutate: func(r *rbacv1.Role) {
				r.Finalizers = []string{metav1.FinalizerDeleteDependents}
				r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "team-a", UID: "u1"}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, c := &fakeWriter{stored: storedRole()}, &recordingCheck{err: tc.checkErr}
			updated := storedRole()
			tc.mutate(updated)
			_, _, err := guarded(w, c).Update(context.Background(), "reader", rest.DefaultUpdatedObjectInfo(updated), nil, nil, false, &metav1.UpdateOptions{})
			if (c.calls > 0) != tc.wantCheck {
				t.Errorf("checked %d times, want check %v", c.calls, tc.wantCheck)
			}
			if tc.wantCheck && (c.gotOld == nil || c.gotOld.ResourceVersion != "4" || len(c.gotRules) != len(updated.Rules)) {
				t.Errorf("check got old %v and rules %v, want the stored role and the updated rules", c.gotOld, c.gotRules)
			}
			if (tc.wantErr == nil && err != nil) || (tc.wantErr != nil && !tc.wantErr(err)) {
				t.Fatalf("error = %v", err)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("message = %q, want %q", err.Error(), tc.wantMsg)
			}
			if (w.writes > 0) != (err == nil) {
				t.Errorf("wrote %d times with error %v", w.writes, err)
			}
		})
	}
}
