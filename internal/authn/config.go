package authn

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
)

var configCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// Anonymous is the anonymous section of an AuthenticationConfiguration file.
type Anonymous struct {
	Enabled bool
	// Paths, when not empty, are the only paths anonymous requests may reach.
	Paths []string
}

// FileConfig is a validated AuthenticationConfiguration file.
type FileConfig struct {
	// Anonymous is the anonymous section, nil when the file has none.
	Anonymous *Anonymous
	// JWT are the issuers whose tokens are accepted, as the file lists them.
	JWT []apiserver.JWTAuthenticator
	// Data is the file's content, which tells a changed file from a touched one.
	Data string
}

// LoadConfigFile reads an AuthenticationConfiguration (apiserver.config.k8s.io, v1 or v1beta1)
// and validates it as upstream does. disallowedIssuers are this server's own service-account
// issuers: a JWT authenticator may not claim their tokens.
func LoadConfigFile(path string, compiler authenticationcel.Compiler, disallowedIssuers []string) (*FileConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading authentication configuration: %w", err)
	}
	c, err := ParseConfig(data, compiler, disallowedIssuers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and validates an AuthenticationConfiguration; see LoadConfigFile.
func ParseConfig(data []byte, compiler authenticationcel.Compiler, disallowedIssuers []string) (*FileConfig, error) {
	c, err := decodeConfig(data)
	if err != nil {
		return nil, err
	}
	anonymous, err := anonymousSection(c.Anonymous)
	if err != nil {
		return nil, err
	}
	errs := apiservervalidation.ValidateAuthenticationConfiguration(compiler, c, disallowedIssuers)
	for i, j := range c.JWT {
		// idplane has no egress selector configuration to route issuer traffic through; an
		// issuer that asks for one would otherwise be dialled directly, against its intent.
		if j.Issuer.EgressSelectorType != "" {
			errs = append(errs, field.Forbidden(field.NewPath("jwt").Index(i).Child("issuer", "egressSelectorType"),
				"idplane has no egress selector configuration; leave it empty"))
		}
	}
	if err := errs.ToAggregate(); err != nil {
		return nil, fmt.Errorf("invalid authentication configuration: %w", err)
	}
	return &FileConfig{Anonymous: anonymous, JWT: c.JWT, Data: string(data)}, nil
}

func decodeConfig(data []byte) (*apiserver.AuthenticationConfiguration, error) {
	if len(data) == 0 {
		return nil, errors.New("empty authentication configuration")
	}
	obj, _, err := configCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding authentication configuration: %w", err)
	}
	c, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("the file holds a %T, not an AuthenticationConfiguration", obj)
	}
	return c, nil
}

func anonymousSection(s *apiserver.AnonymousAuthConfig) (*Anonymous, error) {
	if s == nil {
		return nil, nil
	}
	a := &Anonymous{Enabled: s.Enabled}
	seen := map[string]bool{}
	for i, cond := range s.Conditions {
		switch {
		case !a.Enabled:
			return nil, errors.New("anonymous.conditions need anonymous.enabled: true")
		case cond.Path == "":
			return nil, fmt.Errorf("anonymous.conditions[%d].path is required", i)
		case seen[cond.Path]:
			return nil, fmt.Errorf("anonymous.conditions[%d].path %q is listed twice", i, cond.Path)
		}
		seen[cond.Path] = true
		a.Paths = append(a.Paths, cond.Path)
	}
	return a, nil
}
