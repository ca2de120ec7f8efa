package apiserver

import (
	"net"
	"strings"
	"testing"
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
