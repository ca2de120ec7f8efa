package kubernetesservice

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var start = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

func replica(t *testing.T, client kubernetes.Interface, clk *clocktesting.FakeClock, ip string, port int32) *Controller {
	t.Helper()
	c, err := New(Config{Client: client, Clock: clk, Address: net.ParseIP(ip), Port: port, ClusterIP: net.ParseIP("10.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSync(t *testing.T, c *Controller) {
	t.Helper()
	if err := c.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// addresses lists the Endpoints' addresses as ip:port, and checks the slice agrees.
func addresses(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	e, err := client.CoreV1().Endpoints(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ss := range e.Subsets {
		for _, a := range ss.Addresses {
			out = append(out, net.JoinHostPort(a.IP, itoa(ss.Ports[0].Port)))
		}
	}
	s, err := client.DiscoveryV1().EndpointSlices(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var inSlice []string
	for _, ep := range s.Endpoints {
		inSlice = append(inSlice, net.JoinHostPort(ep.Addresses[0], itoa(*s.Ports[0].Port)))
	}
	// The slice holds the endpoints of its one family and port.
	var sameKind []string
	for _, ss := range e.Subsets {
		for _, a := range ss.Addresses {
			v6 := net.ParseIP(a.IP).To4() == nil
			if v6 == (s.AddressType == "IPv6") && len(s.Ports) > 0 && ss.Ports[0].Port == *s.Ports[0].Port {
				sameKind = append(sameKind, net.JoinHostPort(a.IP, itoa(ss.Ports[0].Port)))
			}
		}
	}
	if !slices.Equal(sameKind, inSlice) {
		t.Errorf("slice lists %v, want %v of endpoints %v", inSlice, sameKind, out)
	}
	return out
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

func TestServiceAndEndpoints(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	mustSync(t, replica(t, client, clk, "192.0.2.10", 6443))

	svc, err := client.CoreV1().Services(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.0.0.1" || !slices.Equal(svc.Spec.ClusterIPs, []string{"10.0.0.1"}) || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service spec = %+v", svc.Spec)
	}
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Name != "https" || p[0].Port != 443 || p[0].TargetPort != intstr.FromInt32(6443) || p[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("service ports = %+v, want https 443 → 6443", p)
	}
	if got := addresses(t, client); !slices.Equal(got, []string{"192.0.2.10:6443"}) {
		t.Errorf("endpoints = %v", got)
	}
	slice, _ := client.DiscoveryV1().EndpointSlices(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if slice.Labels["kubernetes.io/service-name"] != Name || slice.AddressType != "IPv4" {
		t.Errorf("slice = %+v", slice)
	}
}

// A replica that stops renewing leaves the endpoints once its lease ran out, at the next sync of
// a live one: within LeaseDuration + Interval. One that stops cleanly leaves at once.
func TestReplicasComeAndGo(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	a := replica(t, client, clk, "192.0.2.10", 6443)
	b := replica(t, client, clk, "192.0.2.11", 6443)
	c := replica(t, client, clk, "2001:db8::12", 6443)
	mustSync(t, a)
	mustSync(t, b)
	mustSync(t, c)
	want := []string{"192.0.2.10:6443", "192.0.2.11:6443", "[2001:db8::12]:6443"}
	mustSync(t, a)
	if got := addresses(t, client); !slices.Equal(got, want) {
		t.Fatalf("endpoints = %v, want %v", got, want)
	}

	// b crashes: it renews no more. Its lease holds until start+15s.
	clk.Step(DefaultInterval)
	mustSync(t, a)
	mustSync(t, c)
	if got := addresses(t, client); !slices.Contains(got, "192.0.2.11:6443") {
		t.Fatalf("endpoints = %v: b left before its lease ran out", got)
	}
	clk.Step(DefaultInterval)
	mustSync(t, a)
	want = []string{"192.0.2.10:6443", "[2001:db8::12]:6443"}
	if got := addresses(t, client); !slices.Equal(got, want) {
		t.Fatalf("endpoints = %v, want %v once b's lease ran out", got, want)
	}

	// c stops cleanly.
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := addresses(t, client); !slices.Equal(got, []string{"192.0.2.10:6443"}) {
		t.Fatalf("endpoints = %v after c stopped", got)
	}
	if _, err := client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), c.leaseName(), metav1.GetOptions{}); err == nil {
		t.Error("c's lease is still there")
	}
}

// Leases that do not name a usable endpoint, and expired ones, are not endpoints.
func TestLeasesThatAreNoEndpoints(t *testing.T) {
	now := metav1.NewMicroTime(start)
	old := metav1.NewMicroTime(start.Add(-16 * time.Second))
	lease := func(name string, holder *string, renewed *metav1.MicroTime, labelled bool) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: holder, RenewTime: renewed, LeaseDurationSeconds: ptr.To[int32](15)},
		}
		if labelled {
			l.Labels = map[string]string{LeaseLabel: "true"}
		}
		return l
	}
	client := fake.NewClientset(
		lease("expired", ptr.To("192.0.2.20:6443"), &old, true),
		lease("no-port", ptr.To("192.0.2.21"), &now, true),
		lease("unspecified", ptr.To("0.0.0.0:6443"), &now, true),
		lease("port-zero", ptr.To("192.0.2.22:0"), &now, true),
		lease("a-name", ptr.To("apiserver.example.com:6443"), &now, true),
		lease("never-renewed", ptr.To("192.0.2.23:6443"), nil, true),
		lease("unlabelled", ptr.To("192.0.2.24:6443"), &now, false),
	)
	clk := clocktesting.NewFakeClock(start)
	mustSync(t, replica(t, client, clk, "192.0.2.10", 6443))
	if got := addresses(t, client); !slices.Equal(got, []string{"192.0.2.10:6443"}) {
		t.Fatalf("endpoints = %v, want only the replica's own", got)
	}
}

// What anyone changes of the Service, or deleting it, is undone at the next sync, as upstream.
func TestServiceReconciled(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		tamper func(t *testing.T, client kubernetes.Interface)
	}{
		{"ports changed", func(t *testing.T, client kubernetes.Interface) {
			svc, _ := client.CoreV1().Services(Namespace).Get(ctx, Name, metav1.GetOptions{})
			svc.Spec.Ports[0].Port, svc.Spec.Ports[0].TargetPort = 8443, intstr.FromInt32(9999)
			svc.Labels = nil
			if _, err := client.CoreV1().Services(Namespace).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(t *testing.T, client kubernetes.Interface) {
			if err := client.CoreV1().Services(Namespace).Delete(ctx, Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"another cluster IP", func(t *testing.T, client kubernetes.Interface) {
			svc, _ := client.CoreV1().Services(Namespace).Get(ctx, Name, metav1.GetOptions{})
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.0.0.99", []string{"10.0.0.99"}
			if _, err := client.CoreV1().Services(Namespace).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"endpoints rewritten", func(t *testing.T, client kubernetes.Interface) {
			e, _ := client.CoreV1().Endpoints(Namespace).Get(ctx, Name, metav1.GetOptions{})
			e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "203.0.113.66"}}
			if _, err := client.CoreV1().Endpoints(Namespace).Update(ctx, e, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := client.DiscoveryV1().EndpointSlices(Namespace).Delete(ctx, Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			c := replica(t, client, clocktesting.NewFakeClock(start), "192.0.2.10", 6443)
			mustSync(t, c)
			want, _ := client.CoreV1().Services(Namespace).Get(ctx, Name, metav1.GetOptions{})
			tc.tamper(t, client)
			mustSync(t, c)
			got, err := client.CoreV1().Services(Namespace).Get(ctx, Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !serviceMatches(got, want) {
				t.Errorf("service after sync = %+v, want %+v", got.Spec, want.Spec)
			}
			if got := addresses(t, client); !slices.Equal(got, []string{"192.0.2.10:6443"}) {
				t.Errorf("endpoints = %v", got)
			}
		})
	}
}

// Start syncs on every tick of its clock.
func TestStartSyncsEveryInterval(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	c := replica(t, client, clk, "192.0.2.10", 6443)
	mustSync(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := c.Start(ctx)
	defer func() {
		cancel()
		<-done
	}()
	renewedAt := func() time.Time {
		l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, c.leaseName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	clk.Step(DefaultInterval)
	want := start.Add(DefaultInterval)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return renewedAt().Equal(want), nil
	}); err != nil {
		t.Fatalf("lease renewed at %v, want %v after one interval", renewedAt(), want)
	}
}

func TestNewRefusesUnusableEndpoints(t *testing.T) {
	for _, cfg := range []Config{
		{Address: net.IPv4zero, Port: 6443, ClusterIP: net.ParseIP("10.0.0.1")},
		{Port: 6443, ClusterIP: net.ParseIP("10.0.0.1")},
		{Address: net.ParseIP("192.0.2.1"), Port: 0, ClusterIP: net.ParseIP("10.0.0.1")},
		{Address: net.ParseIP("192.0.2.1"), Port: 6443},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
