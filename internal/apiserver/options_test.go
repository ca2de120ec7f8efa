package apiserver

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		modify  func(*Options)
		wantErr string
	}{
		{name: "defaults", modify: func(*Options) {}},
		{
			name:    "mode Node without NodeRestriction",
			modify:  func(o *Options) { o.Admission.DisablePlugins = []string{"NodeRestriction"} },
			wantErr: "--authorization-mode Node needs the NodeRestriction admission plugin",
		},
		{
			name: "RBAC alone without NodeRestriction",
			modify: func(o *Options) {
				o.AuthorizationModes = []string{"RBAC"}
				o.Admission.DisablePlugins = []string{"NodeRestriction"}
			},
		},
		{
			name:   "mode Node with other plugins disabled",
			modify: func(o *Options) { o.Admission.DisablePlugins = []string{"NamespaceLifecycle"} },
		},
		{
			name:    "no request timeout",
			modify:  func(o *Options) { o.RequestTimeout = 0 },
			wantErr: "--request-timeout 0s must be positive",
		},
		{name: "token maximum of a day", modify: func(o *Options) { o.ServiceAccounts.MaxTokenExpiration = 24 * time.Hour }},
		{
			name:    "token maximum under an hour",
			modify:  func(o *Options) { o.ServiceAccounts.MaxTokenExpiration = 30 * time.Minute },
			wantErr: "--service-account-max-token-expiration 30m0s must be between 1h and 2^32 seconds",
		},
		{
			name:    "token maximum past 2^32 seconds",
			modify:  func(o *Options) { o.ServiceAccounts.MaxTokenExpiration = (1<<32 + 1) * time.Second },
			wantErr: "must be between 1h and 2^32 seconds",
		},
		{name: "issuer URL", modify: func(o *Options) { o.ServiceAccounts.Issuers = []string{"https://idplane.example.com", "old-issuer"} }},
		{
			name:    "issuer with a colon that is no URL",
			modify:  func(o *Options) { o.ServiceAccounts.Issuers = []string{"not:a-url"} },
			wantErr: `--service-account-issuer "not:a-url" must be a URL or a string without colons`,
		},
		{
			name:    "lease not longer than the renew deadline",
			modify:  func(o *Options) { o.LeaderElection.LeaseDuration = o.LeaderElection.RenewDeadline },
			wantErr: "leaderElection.leaseDuration",
		},
		{
			name:    "retry period too long for the renew deadline",
			modify:  func(o *Options) { o.LeaderElection.RetryPeriod.Duration = 9 * time.Second },
			wantErr: "--leader-elect-renew-deadline 10s must be more than 1.2 times --leader-elect-retry-period 9s",
		},
		{
			name:    "lock other than leases",
			modify:  func(o *Options) { o.LeaderElection.ResourceLock = "configmapsleases" },
			wantErr: `--leader-elect-resource-lock "configmapsleases": only "leases" is supported`,
		},
		{
			name: "no leader election, durations unused",
			modify: func(o *Options) {
				o.LeaderElection.LeaderElect = false
				o.LeaderElection.LeaseDuration.Duration = 0
			},
		},
		{
			name:    "negative shutdown delay",
			modify:  func(o *Options) { o.Shutdown.DelayDuration = -time.Second },
			wantErr: "--shutdown-delay-duration and --shutdown-watch-termination-grace-period must not be negative",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestServerRefusesModeNodeWithoutNodeRestriction(t *testing.T) {
	o := NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	o.Admission.DisablePlugins = []string{"NodeRestriction"}
	expectStartRefused(t, o, "needs the NodeRestriction admission plugin")
}
