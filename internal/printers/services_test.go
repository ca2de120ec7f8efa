package printers

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
)

func TestServiceRows(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", CreationTimestamp: ago(3 * time.Hour)}
	tests := []struct {
		name      string
		convertor rest.TableConvertor
		obj       runtime.Object
		want      []any
	}{
		{
			name:      "the kubernetes service",
			convertor: services,
			obj: &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"},
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}},
			}},
			want: []any{"kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP", "3h", "<none>"},
		},
		{
			name:      "node ports, external IPs and a selector",
			convertor: services,
			obj: &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.0.0.9"}, ExternalIPs: []string{"192.0.2.1", "192.0.2.2"},
				Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{
					{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
					{Port: 53, Protocol: corev1.ProtocolUDP},
				},
			}},
			want: []any{"kubernetes", "NodePort", "10.0.0.9", "192.0.2.1,192.0.2.2", "80:30080/TCP,53/UDP", "3h", "app=web"},
		},
		{
			name:      "pending load balancer without ports",
			convertor: services,
			obj:       &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
			want:      []any{"kubernetes", "LoadBalancer", "<none>", "<pending>", "<none>", "3h", "<none>"},
		},
		{
			name:      "endpoints of two replicas",
			convertor: endpoints,
			obj: &corev1.Endpoints{ObjectMeta: meta, Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}, {IP: "2001:db8::1"}},
				Ports:     []corev1.EndpointPort{{Name: "https", Port: 6443}},
			}}},
			want: []any{"kubernetes", "192.0.2.10:6443,[2001:db8::1]:6443", "3h"},
		},
		{
			name:      "more endpoints than a cell lists",
			convertor: endpoints,
			obj: &corev1.Endpoints{ObjectMeta: meta, Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}, {IP: "192.0.2.2"}, {IP: "192.0.2.3"}, {IP: "192.0.2.4"}, {IP: "192.0.2.5"}},
				Ports:     []corev1.EndpointPort{{Port: 443}},
			}}},
			want: []any{"kubernetes", "192.0.2.1:443,192.0.2.2:443,192.0.2.3:443 + 2 more...", "3h"},
		},
		{
			name:      "no endpoints",
			convertor: endpoints,
			obj:       &corev1.Endpoints{ObjectMeta: meta},
			want:      []any{"kubernetes", "<none>", "3h"},
		},
		{
			name:      "endpoint slice",
			convertor: endpointSlices,
			obj: &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}, {Addresses: []string{"192.0.2.11"}}},
			},
			want: []any{"kubernetes", "IPv4", "6443", "192.0.2.10,192.0.2.11", "3h"},
		},
		{
			name:      "empty endpoint slice",
			convertor: endpointSlices,
			obj:       &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv6},
			want:      []any{"kubernetes", "IPv6", "<unset>", "<unset>", "3h"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cells(t, tt.convertor, tt.obj); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %#v, want %#v", got, tt.want)
			}
		})
	}
}
