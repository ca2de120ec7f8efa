package apiserver

import (
	"context"
	"strings"
	"testing"
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
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := Start(ctx, o)
	if err == nil {
		cancel()
		srv.Wait()
		t.Fatal("the server started with mode Node and NodeRestriction disabled")
	}
	if !strings.Contains(err.Error(), "needs the NodeRestriction admission plugin") {
		t.Errorf("error = %v, want it to say NodeRestriction is needed", err)
	}
}
