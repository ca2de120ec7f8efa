package validation

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptrTo("node-1"),
			LeaseDurationSeconds: ptrTo[int32](40),
			LeaseTransitions:     ptrTo[int32](0),
			RenewTime:            ptrTo(metav1.NowMicro()),
		},
	}
}

func TestValidateLease(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*coordinationv1.Lease)
		want   []want
	}{
		{name: "valid", mutate: func(*coordinationv1.Lease) {}},
		{
			name: "coordinated with preferred holder",
			mutate: func(l *coordinationv1.Lease) {
				l.Spec.Strategy = ptrTo(coordinationv1.OldestEmulationVersion)
				l.Spec.PreferredHolder = ptrTo("node-2")
			},
		},
		{name: "custom strategy", mutate: func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptrTo[coordinationv1.CoordinatedLeaseStrategy]("example.com/newest")
		}},
		{name: "zero duration", mutate: func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptrTo[int32](0) }, want: []want{invalid("spec.leaseDurationSeconds")}},
		{name: "negative transitions", mutate: func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptrTo[int32](-1) }, want: []want{invalid("spec.leaseTransitions")}},
		{
			name: "unknown builtin strategy",
			mutate: func(l *coordinationv1.Lease) {
				l.Spec.Strategy = ptrTo[coordinationv1.CoordinatedLeaseStrategy]("Newest")
			},
			want: []want{notSupported("spec.strategy")},
		},
		{
			name:   "preferred holder without strategy",
			mutate: func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptrTo("node-2") },
			want:   []want{forbidden("spec.preferredHolder")},
		},
		{name: "invalid name", mutate: func(l *coordinationv1.Lease) { l.Name = "Node 1" }, want: []want{invalid("metadata.name")}},
		{name: "missing namespace", mutate: func(l *coordinationv1.Lease) { l.Namespace = "" }, want: []want{required("metadata.namespace")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := validLease()
			tc.mutate(l)
			expectErrors(t, ValidateLease(l), tc.want...)
		})
	}
}

func TestValidateLeaseUpdate(t *testing.T) {
	oldL := validLease()
	oldL.ResourceVersion = "100"

	newL := oldL.DeepCopy()
	newL.Spec.HolderIdentity = ptrTo("node-2")
	newL.Spec.LeaseTransitions = ptrTo[int32](1)
	expectErrors(t, ValidateLeaseUpdate(newL, oldL))

	newL = oldL.DeepCopy()
	newL.Spec.LeaseDurationSeconds = ptrTo[int32](-5)
	expectErrors(t, ValidateLeaseUpdate(newL, oldL), invalid("spec.leaseDurationSeconds"))
}

// TestLeaseMessages pins what a user reads for each lease rule.
func TestLeaseMessages(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*coordinationv1.Lease)
		want   []string
	}{
		{name: "zero duration", mutate: func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptrTo[int32](0) }, want: []string{
			"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
		}},
		{name: "negative transitions", mutate: func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptrTo[int32](-2) }, want: []string{
			"spec.leaseTransitions: Invalid value: -2: must be greater than or equal to 0",
		}},
		{name: "unknown builtin strategy", mutate: func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptrTo[coordinationv1.CoordinatedLeaseStrategy]("Newest")
		}, want: []string{
			`spec.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"`,
		}},
		{name: "malformed custom strategy", mutate: func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptrTo[coordinationv1.CoordinatedLeaseStrategy]("example.com/new est")
		}, want: []string{
			`spec.strategy: Invalid value: "example.com/new est": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{name: "empty strategy", mutate: func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptrTo[coordinationv1.CoordinatedLeaseStrategy]("")
			l.Spec.PreferredHolder = ptrTo("node-2")
		}, want: []string{
			`spec.strategy: Unsupported value: "": supported values: "OldestEmulationVersion"`,
			"spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
		}},
		{name: "empty preferred holder without strategy", mutate: func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptrTo("") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := validLease()
			tc.mutate(l)
			expectMessages(t, ValidateLease(l), tc.want...)
		})
	}
}
