// Package kubernetesservice keeps the default/kubernetes Service, its Endpoints and its
// EndpointSlice, as every kube-apiserver does: the Service's ClusterIP is the first address of the
// service range and its port 443 targets the secure port; the endpoints are the advertised
// addresses of the live replicas. Each replica holds a Lease of its own, renewed every Interval
// and valid for LeaseDuration, so a replica that stops renewing leaves the endpoints at most
// Interval after its lease ran out; one that stops cleanly leaves at once.
package kubernetesservice

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// Upstream's lease endpoint reconciler's defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultInterval      = 10 * time.Second
)

const (
	// Name and Namespace are the Service's, its Endpoints' and its EndpointSlice's.
	Name      = "kubernetes"
	Namespace = metav1.NamespaceDefault
	// LeaseNamespace holds the replicas' Leases.
	LeaseNamespace = metav1.NamespaceSystem
	// LeaseLabel marks the replicas' Leases, so that every replica lists exactly those.
	LeaseLabel = "idplane.io/kubernetes-service-endpoint"
	// portName is the Service's and the endpoints' one port, as upstream names it.
	portName = "https"
	// servicePort is the port in-cluster clients dial.
	servicePort = 443
	// managedBy tells EndpointSlice controllers the slice is not theirs.
	managedBy = "idplane-apiserver"
)

// serviceLabels are upstream's labels on the kubernetes Service and Endpoints.
var serviceLabels = map[string]string{"component": "apiserver", "provider": "kubernetes"}

// Config is one replica's part.
type Config struct {
	Client kubernetes.Interface
	Clock  clock.WithTicker
	// Address and Port are where this replica is reached: its advertised address and secure port.
	Address net.IP
	Port    int32
	// ClusterIP is the Service's address: the first of the service range.
	ClusterIP net.IP
	// LeaseDuration is how long a replica counts as live after renewing; Interval, how often it
	// renews and writes the Service and its endpoints.
	LeaseDuration time.Duration
	Interval      time.Duration
}

// Controller keeps the kubernetes Service and this replica's place in its endpoints.
type Controller struct {
	c        Config
	endpoint string
}

// New returns the controller; Run starts it.
func New(c Config) (*Controller, error) {
	if c.Address == nil || c.Address.IsUnspecified() {
		return nil, fmt.Errorf("the kubernetes Service needs a specific advertised address, not %v", c.Address)
	}
	if c.ClusterIP == nil {
		return nil, errors.New("the kubernetes Service needs a cluster IP")
	}
	if c.Port <= 0 || c.Port > 65535 {
		return nil, fmt.Errorf("the kubernetes Service's target port %d is not in 1..65535", c.Port)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return &Controller{c: c, endpoint: net.JoinHostPort(c.Address.String(), strconv.Itoa(int(c.Port)))}, nil
}

// Start syncs every Interval, from now on, until ctx ends; done is closed when the loop returned.
// The first sync is the caller's (Sync): a server waits for it before it reports ready.
func (c *Controller) Start(ctx context.Context) (done <-chan struct{}) {
	// The ticker exists when Start returns, so a test's clock step cannot come before it.
	ticker := c.c.Clock.NewTicker(c.c.Interval)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				if err := c.Sync(ctx); err != nil {
					klog.FromContext(ctx).Error(err, "Keeping the kubernetes Service; retrying", "interval", c.c.Interval)
				}
			}
		}
	}()
	return stopped
}

// Sync renews this replica's Lease, then writes the Service and the endpoints of every live
// replica.
func (c *Controller) Sync(ctx context.Context) error {
	if err := c.renew(ctx); err != nil {
		return err
	}
	return c.write(ctx)
}

// Stop takes this replica out: its Lease goes and the endpoints are written without it, so
// clients stop dialling it before it stops serving.
func (c *Controller) Stop(ctx context.Context) error {
	err := c.c.Client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, c.leaseName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting lease %s/%s: %w", LeaseNamespace, c.leaseName(), err)
	}
	return c.write(ctx)
}

// leaseName names this replica's Lease after its endpoint, so a replica that restarts takes its
// own Lease back rather than leaving a second one to expire.
func (c *Controller) leaseName() string {
	return "idplane-apiserver-" + strings.NewReplacer(".", "-", ":", "-").Replace(c.c.Address.String()) + "-" + strconv.Itoa(int(c.c.Port))
}

func (c *Controller) renew(ctx context.Context) error {
	leases := c.c.Client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(c.c.Clock.Now())
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(c.endpoint),
		LeaseDurationSeconds: ptr.To(int32(c.c.LeaseDuration / time.Second)),
		RenewTime:            &now,
	}
	lease, err := leases.Get(ctx, c.leaseName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.leaseName(), Namespace: LeaseNamespace, Labels: map[string]string{LeaseLabel: "true"}},
			Spec:       spec,
		}
		lease.Spec.AcquireTime = &now
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else if err == nil {
		lease.Labels = mergeLabels(lease.Labels, map[string]string{LeaseLabel: "true"})
		spec.AcquireTime = lease.Spec.AcquireTime
		lease.Spec = spec
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renewing lease %s/%s: %w", LeaseNamespace, c.leaseName(), err)
	}
	return nil
}

// endpoint is one live replica.
type endpoint struct {
	ip   net.IP
	port int32
}

// live lists the replicas whose Leases have not run out, by address.
func (c *Controller) live(ctx context.Context) ([]endpoint, error) {
	list, err := c.c.Client.CoordinationV1().Leases(LeaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: LeaseLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the replicas' leases: %w", err)
	}
	now := c.c.Clock.Now()
	var out []endpoint
	for _, l := range list.Items {
		e, ok := leaseEndpoint(&l, now)
		if ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(cmp.Compare(a.port, b.port), strings.Compare(a.ip.String(), b.ip.String()))
	})
	return slices.CompactFunc(out, func(a, b endpoint) bool { return a.port == b.port && a.ip.Equal(b.ip) }), nil
}

// leaseEndpoint reads a replica's endpoint from its Lease, if the Lease is current and says a
// usable address and port.
func leaseEndpoint(l *coordinationv1.Lease, now time.Time) (endpoint, bool) {
	s := l.Spec
	if s.HolderIdentity == nil || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return endpoint{}, false
	}
	if !s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second).After(now) {
		return endpoint{}, false
	}
	host, portText, err := net.SplitHostPort(*s.HolderIdentity)
	if err != nil {
		return endpoint{}, false
	}
	ip := netutils.ParseIPSloppy(host)
	port, err := strconv.ParseInt(portText, 10, 32)
	if ip == nil || ip.IsUnspecified() || err != nil || port <= 0 || port > 65535 {
		return endpoint{}, false
	}
	return endpoint{ip: ip, port: int32(port)}, true
}

// write brings the Service, Endpoints and EndpointSlice to what the live replicas make them.
func (c *Controller) write(ctx context.Context) error {
	live, err := c.live(ctx)
	if err != nil {
		return err
	}
	slice := desiredSlice(live)
	targetPort := c.c.Port
	if len(slice.Ports) > 0 {
		// Every replica computes the same port from the same leases, so replicas on different
		// ports do not take turns rewriting the Service.
		targetPort = *slice.Ports[0].Port
	}
	return errors.Join(
		c.writeService(ctx, targetPort),
		c.writeEndpoints(ctx, desiredEndpoints(live)),
		c.writeSlice(ctx, slice),
	)
}

func (c *Controller) desiredService(targetPort int32) *corev1.Service {
	ip := c.c.ClusterIP.String()
	family := corev1.IPv4Protocol
	if netutils.IsIPv6(c.c.ClusterIP) {
		family = corev1.IPv6Protocol
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: serviceLabels},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			IPFamilies: []corev1.IPFamily{family}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			Ports: []corev1.ServicePort{{
				Name: portName, Port: servicePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(targetPort),
			}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
}

// writeService creates the Service, or puts back what anyone changed of it. A Service with
// another cluster IP, which cannot change in place, is replaced.
func (c *Controller) writeService(ctx context.Context, targetPort int32) error {
	services := c.c.Client.CoreV1().Services(Namespace)
	want := c.desiredService(targetPort)
	have, err := services.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = services.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
	case have.Spec.ClusterIP != want.Spec.ClusterIP:
		klog.FromContext(ctx).Info("Replacing the kubernetes Service: its cluster IP is not the first of the service range",
			"clusterIP", have.Spec.ClusterIP, "want", want.Spec.ClusterIP)
		err = services.Delete(ctx, Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(have.UID))})
		if err == nil || apierrors.IsNotFound(err) {
			_, err = services.Create(ctx, want, metav1.CreateOptions{})
		}
	case !serviceMatches(have, want):
		have.Labels = mergeLabels(have.Labels, want.Labels)
		have.Spec = want.Spec
		_, err = services.Update(ctx, have, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing Service %s/%s: %w", Namespace, Name, err)
	}
	return nil
}

// serviceMatches: the Service has the labels and exactly the spec this replica would write.
func serviceMatches(have, want *corev1.Service) bool {
	return labelsHold(have.Labels, want.Labels) && apiequality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// desiredEndpoints groups the live replicas by port, one subset each.
func desiredEndpoints(live []endpoint) *corev1.Endpoints {
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{
		Name: Name, Namespace: Namespace,
		// The Endpoints are written next to the slice; mirroring them would make a second one.
		Labels: mergeLabels(serviceLabels, map[string]string{discoveryv1.LabelSkipMirror: "true"}),
	}}
	for _, ep := range live {
		n := len(e.Subsets)
		if n == 0 || e.Subsets[n-1].Ports[0].Port != ep.port {
			e.Subsets = append(e.Subsets, corev1.EndpointSubset{
				Ports: []corev1.EndpointPort{{Name: portName, Port: ep.port, Protocol: corev1.ProtocolTCP}},
			})
			n++
		}
		e.Subsets[n-1].Addresses = append(e.Subsets[n-1].Addresses, corev1.EndpointAddress{IP: ep.ip.String()})
	}
	return e
}

func (c *Controller) writeEndpoints(ctx context.Context, want *corev1.Endpoints) error {
	endpoints := c.c.Client.CoreV1().Endpoints(Namespace)
	have, err := endpoints.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = endpoints.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
	case !labelsHold(have.Labels, want.Labels) || !apiequality.Semantic.DeepEqual(have.Subsets, want.Subsets):
		have.Labels = mergeLabels(have.Labels, want.Labels)
		have.Subsets = want.Subsets
		_, err = endpoints.Update(ctx, have, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing Endpoints %s/%s: %w", Namespace, Name, err)
	}
	return nil
}

// desiredSlice is the one EndpointSlice "kubernetes". A slice has one address family and one port
// list, so it holds the replicas of the family and port most of them share (IPv4 and the lower
// port on a tie); the Endpoints list every replica.
func desiredSlice(live []endpoint) *discoveryv1.EndpointSlice {
	type key struct {
		family discoveryv1.AddressType
		port   int32
	}
	keyOf := func(e endpoint) key {
		if netutils.IsIPv6(e.ip) {
			return key{discoveryv1.AddressTypeIPv6, e.port}
		}
		return key{discoveryv1.AddressTypeIPv4, e.port}
	}
	counts := map[key]int{}
	for _, e := range live {
		counts[keyOf(e)]++
	}
	var best key
	bestCount := 0
	for k, n := range counts {
		if n > bestCount || (n == bestCount && (k.family < best.family || (k.family == best.family && k.port < best.port))) {
			best, bestCount = k, n
		}
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: Name, discoveryv1.LabelManagedBy: managedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	if bestCount == 0 {
		return s
	}
	s.AddressType = best.family
	s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(best.port), Protocol: ptr.To(corev1.ProtocolTCP)}}
	for _, e := range live {
		if keyOf(e) == best {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses: []string{e.ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			})
		}
	}
	return s
}

func (c *Controller) writeSlice(ctx context.Context, want *discoveryv1.EndpointSlice) error {
	slices := c.c.Client.DiscoveryV1().EndpointSlices(Namespace)
	have, err := slices.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
	case have.AddressType != want.AddressType:
		// The address type cannot change in place.
		err = slices.Delete(ctx, Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(have.UID))})
		if err == nil || apierrors.IsNotFound(err) {
			_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		}
	case !labelsHold(have.Labels, want.Labels) || !apiequality.Semantic.DeepEqual(have.Endpoints, want.Endpoints) ||
		!apiequality.Semantic.DeepEqual(have.Ports, want.Ports):
		have.Labels = mergeLabels(have.Labels, want.Labels)
		have.Endpoints, have.Ports = want.Endpoints, want.Ports
		_, err = slices.Update(ctx, have, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing EndpointSlice %s/%s: %w", Namespace, Name, err)
	}
	return nil
}

// labelsHold: have carries every label of want.
func labelsHold(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// mergeLabels is have with want's labels set.
func mergeLabels(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
