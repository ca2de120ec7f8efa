package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/controller/kubernetesservice"
)

func TestKubernetesServiceOptions(t *testing.T) {
	cases := []struct {
		name           string
		modify         func(*Options)
		wantServiceIP  string
		wantAdvertised string
		wantErr        string
	}{
		{name: "defaults", modify: func(*Options) {}, wantServiceIP: "10.0.0.1", wantAdvertised: "127.0.0.1"},
		{
			name:          "advertise address given",
			modify:        func(o *Options) { o.AdvertiseAddress = net.ParseIP("192.0.2.7") },
			wantServiceIP: "10.0.0.1", wantAdvertised: "192.0.2.7",
		},
		{
			name:          "bind address advertised",
			modify:        func(o *Options) { o.BindAddress = net.ParseIP("192.0.2.8") },
			wantServiceIP: "10.0.0.1", wantAdvertised: "192.0.2.8",
		},
		{
			name:          "IPv6 range",
			modify:        func(o *Options) { o.ServiceClusterIPRange = "fd00:10::/108" },
			wantServiceIP: "fd00:10::1", wantAdvertised: "127.0.0.1",
		},
		{
			name:          "range given by an address inside it",
			modify:        func(o *Options) { o.ServiceClusterIPRange = "10.96.0.10/12" },
			wantServiceIP: "10.96.0.1", wantAdvertised: "127.0.0.1",
		},
		{
			name:    "not a CIDR",
			modify:  func(o *Options) { o.ServiceClusterIPRange = "10.0.0.1" },
			wantErr: `--service-cluster-ip-range "10.0.0.1": invalid CIDR address`,
		},
		{
			name:    "dual-stack list",
			modify:  func(o *Options) { o.ServiceClusterIPRange = "10.0.0.0/24,fd00::/108" },
			wantErr: "give one CIDR; idplane's kubernetes Service is single-stack",
		},
		{
			name:    "a range of one address",
			modify:  func(o *Options) { o.ServiceClusterIPRange = "10.0.0.0/32" },
			wantErr: "has no first address for the kubernetes Service",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(o)
			err := o.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate() = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			ip, err := o.KubernetesServiceIP()
			if err != nil || ip.String() != tc.wantServiceIP {
				t.Errorf("KubernetesServiceIP() = %v, %v; want %s", ip, err, tc.wantServiceIP)
			}
			adv, err := o.AdvertisedAddress()
			if err != nil || adv.String() != tc.wantAdvertised {
				t.Errorf("AdvertisedAddress() = %v, %v; want %s", adv, err, tc.wantAdvertised)
			}
		})
	}
}

// With --bind-address 0.0.0.0 the advertised address is a real address of the host, never the
// unspecified one.
func TestAdvertisedAddressOfUnspecifiedBind(t *testing.T) {
	o := NewOptions()
	o.BindAddress = net.IPv4zero
	ip, err := o.AdvertisedAddress()
	if err != nil {
		t.Skipf("this host has no address to advertise: %v", err)
	}
	if ip.IsUnspecified() {
		t.Fatalf("AdvertisedAddress() = %v, want a host address", ip)
	}
}

// endpointAddresses lists the kubernetes Endpoints as ip:port.
func endpointAddresses(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	e, err := client.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the kubernetes Endpoints: %v", err)
	}
	var out []string
	for _, ss := range e.Subsets {
		for _, a := range ss.Addresses {
			out = append(out, net.JoinHostPort(a.IP, strconv.Itoa(int(ss.Ports[0].Port))))
		}
	}
	slices.Sort(out)
	return out
}

func hostPort(t *testing.T, url string) string {
	t.Helper()
	return strings.TrimPrefix(url, "https://")
}

func TestKubernetesServiceServed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	ts := startTestServer(t, t.TempDir(), func(o *Options) { o.kubernetesServiceClock = clk })
	ctx := context.Background()
	_, portText, _ := net.SplitHostPort(hostPort(t, ts.URL))
	port, _ := strconv.Atoi(portText)

	svc, err := ts.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a ready server has no kubernetes Service: %v", err)
	}
	if svc.Spec.ClusterIP != "10.0.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].TargetPort.IntValue() != port || svc.Spec.Ports[0].Name != "https" {
		t.Errorf("kubernetes Service spec = %+v, want 10.0.0.1, https 443 → %d", svc.Spec, port)
	}
	if got, want := endpointAddresses(t, ts.client), []string{hostPort(t, ts.URL)}; !slices.Equal(got, want) {
		t.Errorf("endpoints = %v, want %v", got, want)
	}
	slice, err := ts.client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "127.0.0.1" {
		t.Errorf("endpoint slice = %+v, %v", slice, err)
	}

	// Any other Service is refused, saying why.
	_, err = ts.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.9", Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "idplane has no service proxy") {
		t.Errorf("creating another Service: %v, want 422 saying idplane has no service proxy", err)
	}
	//lint:ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.
	_, err = ts.client.CoreV1().Endpoints("team-a").Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}}, metav1.CreateOptions{})
	if err == nil {
		t.Error("Endpoints outside default/kubernetes were created")
	}

	// A deleted Service comes back, as upstream's does.
	if err := ts.client.CoreV1().Services("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(kubernetesservice.DefaultInterval)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ts.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the deleted kubernetes Service did not come back at the next sync")
	}

	// The serving certificate covers what in-cluster clients dial.
	cert := servingCertificate(t, ts)
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if err := cert.VerifyHostname(name); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	for _, ip := range []string{"10.0.0.1", "127.0.0.1"} {
		if err := cert.VerifyHostname(ip); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}

	// As upstream's default policy: nodes read the Service, service accounts do not, and no
	// one but administrators writes its endpoints.
	for _, tc := range []struct {
		user   string
		groups []string
		verb   string
		res    string
		allow  bool
	}{
		{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "get", "services", true},
		{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "list", "services", true},
		{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "update", "endpoints", false},
		{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "update", "endpointslices", false},
		{"system:serviceaccount:default:default", []string{"system:serviceaccounts", "system:authenticated"}, "get", "services", false},
		{"system:anonymous", []string{"system:unauthenticated"}, "get", "services", false},
	} {
		attrs := &authorizationv1.ResourceAttributes{Namespace: "default", Verb: tc.verb, Resource: tc.res, Name: "kubernetes"}
		if tc.res == "endpointslices" {
			attrs.Group = "discovery.k8s.io"
		}
		sar, err := ts.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: tc.user, Groups: tc.groups, ResourceAttributes: attrs,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allow {
			t.Errorf("%s may %s %s: %v, want %v (%s)", tc.user, tc.verb, tc.res, sar.Status.Allowed, tc.allow, sar.Status.Reason)
		}
	}

	// Nor may a node add itself to the endpoints through a replica's Lease.
	sar, err := ts.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
	}}, metav1.CreateOptions{})
	if err != nil || sar.Status.Allowed {
		t.Errorf("a node may create Leases in kube-system: %v, %+v", err, sar.Status)
	}

	// Discovery lists the three resources, as clients look for them.
	for gv, resource := range map[string]string{"v1": "services", "discovery.k8s.io/v1": "endpointslices"} {
		list, err := ts.client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }) {
			t.Errorf("discovery of %s lacks %s", gv, resource)
		}
	}
}

// servingCertificate is the certificate the server presents.
func servingCertificate(t *testing.T, ts *testServer) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", hostPort(t, ts.URL), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// Two replicas on one store: each lists itself in the endpoints; a replica that stops renewing
// leaves once its lease ran out, at the next sync (within 15 s + 10 s of its last renewal); one
// that stops cleanly leaves at once.
func TestKubernetesServiceAcrossReplicas(t *testing.T) {
	etcdURL := startSharedEtcd(t)
	// Leases keep microseconds: a clock on whole seconds reads back as it was written.
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	withClock := func(o *Options) {
		replicaOptions(etcdURL)(o)
		o.kubernetesServiceClock = clk
	}
	a := startTestServer(t, t.TempDir(), withClock)
	dirB := t.TempDir()
	if err := os.CopyFS(filepath.Join(dirB, "pki"), os.DirFS(filepath.Join(a.dataDir, "pki"))); err != nil {
		t.Fatal(err)
	}
	b := startTestServer(t, dirB, withClock)
	ctx := context.Background()

	both := []string{hostPort(t, a.URL), hostPort(t, b.URL)}
	slices.Sort(both)
	// b's first sync saw a's lease.
	if got := endpointAddresses(t, a.client); !slices.Equal(got, both) {
		t.Fatalf("endpoints = %v, want both replicas %v", got, both)
	}

	// A replica that crashed: its lease, renewed now, is never renewed again.
	crashed := "127.0.0.1:1"
	now := metav1.NewMicroTime(clk.Now())
	_, err := a.client.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "idplane-apiserver-crashed", Labels: map[string]string{kubernetesservice.LeaseLabel: "true"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &crashed, LeaseDurationSeconds: ptr[int32](15), RenewTime: &now,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// stepAndWait moves the replicas' clock one interval on and waits until both renewed.
	stepAndWait := func() {
		t.Helper()
		clk.Step(kubernetesservice.DefaultInterval)
		want := clk.Now()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			leases, err := a.client.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: kubernetesservice.LeaseLabel})
			if err != nil {
				return false, err
			}
			renewed := 0
			for _, l := range leases.Items {
				if l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(want) {
					renewed++
				}
			}
			return renewed == 2, nil
		})
		if err != nil {
			t.Fatalf("the replicas did not renew their leases at %v: %v", want, err)
		}
	}
	stepAndWait()
	waitEndpoints(t, a.client, append([]string{crashed}, both...))
	stepAndWait()
	// 20 s after its last renewal the crashed replica's 15 s lease has run out.
	waitEndpoints(t, a.client, both)

	// With nothing changed, a renewal writes nothing but the Leases.
	versions := func() []string {
		svc, err1 := a.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		ep, err2 := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		slice, err3 := a.client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		return []string{svc.ResourceVersion, ep.ResourceVersion, slice.ResourceVersion}
	}
	// A replica's loop renews at a step only once its previous step's writes are done: versions
	// read after a renewal include every write of the step before.
	stepAndWait()
	before := versions()
	stepAndWait()
	stepAndWait()
	if after := versions(); !slices.Equal(before, after) {
		t.Errorf("a renewal with nothing changed rewrote the Service, Endpoints or slice: versions %v, then %v", before, after)
	}

	// b stops cleanly: it is out before its server has stopped.
	b.stop()
	if got, want := endpointAddresses(t, a.client), []string{hostPort(t, a.URL)}; !slices.Equal(got, want) {
		t.Fatalf("endpoints = %v after b stopped, want %v", got, want)
	}
}

// waitEndpoints waits until the endpoints are want, after the renewals that write them.
func waitEndpoints(t *testing.T, client kubernetes.Interface, want []string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = endpointAddresses(t, client)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("endpoints = %v, want %v", got, want)
	}
}
