package apiserver

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// defaultAuditPolicy is the audit policy (audit.k8s.io/v1) used when an audit log is written and
// no policy file is given: Metadata for secrets, TokenRequests, CSR approval and signing, and
// every request by a node.
//
//go:embed audit-policy.yaml
var defaultAuditPolicy []byte

// DefaultAuditPolicy returns a copy of the audit policy used when no policy file is given.
func DefaultAuditPolicy() []byte { return bytes.Clone(defaultAuditPolicy) }

// AuditOptions are upstream's audit policy and log backend settings. The library's webhook
// backend is not offered.
type AuditOptions struct {
	genericoptions.AuditOptions
}

// NewAuditOptions returns the library's defaults: no log; when one is asked for, JSON lines of
// audit.k8s.io/v1 events, rotated at 100 MB.
func NewAuditOptions() AuditOptions {
	return AuditOptions{*genericoptions.NewAuditOptions()}
}

// AddFlags registers the policy file and the log backend's flags.
func (a *AuditOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.PolicyFile, "audit-policy-file", a.PolicyFile,
		"Audit policy (audit.k8s.io/v1 Policy) choosing what --audit-log-path records. "+
			"Default: the built-in policy that --print-default-audit-policy prints.")
	a.LogOptions.AddFlags(fs)
	// The library's text says every request is logged; the policy decides that.
	fs.Lookup("audit-log-path").Usage = "File the audit events go to, as the policy selects them ('-' is standard output). Unset: no audit."
}

// Validate reports invalid log settings and a policy that would record nowhere.
func (a *AuditOptions) Validate() []error {
	errs := a.LogOptions.Validate()
	if a.PolicyFile != "" && a.LogOptions.Path == "" {
		errs = append(errs, errors.New("--audit-policy-file needs --audit-log-path: without a log no event is recorded"))
	}
	return errs
}

// ApplyTo sets the server's audit policy and log backend; without --audit-log-path nothing is
// audited.
func (a *AuditOptions) ApplyTo(cfg *genericapiserver.Config) error {
	if a.LogOptions.Path == "" {
		return nil
	}
	lib := a.AuditOptions
	if lib.PolicyFile == "" {
		// The library reads policies from files only; the default exists on disk while it is read.
		f, err := os.CreateTemp("", "idplane-default-audit-policy-*.yaml")
		if err != nil {
			return fmt.Errorf("writing the default audit policy: %w", err)
		}
		defer os.Remove(f.Name())
		_, err = f.Write(defaultAuditPolicy)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing the default audit policy: %w", err)
		}
		lib.PolicyFile = f.Name()
	}
	if err := lib.ApplyTo(cfg); err != nil {
		return fmt.Errorf("configuring audit: %w", err)
	}
	return nil
}
