package authn

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
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

// LoadConfigFile reads an AuthenticationConfiguration (apiserver.config.k8s.io, v1 or v1beta1) and
// returns its anonymous section, nil when it has none. idplane authenticates JWTs of its own issuer
// only, so a file that configures other JWT issuers is refused rather than half-honoured.
func LoadConfigFile(path string) (*Anonymous, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading authentication configuration: %w", err)
	}
	obj, _, err := configCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding authentication configuration %s: %w", path, err)
	}
	c, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not an AuthenticationConfiguration", path, obj)
	}
	if len(c.JWT) > 0 {
		return nil, fmt.Errorf("%s: jwt authenticators are not supported; only the anonymous section is", path)
	}
	if c.Anonymous == nil {
		return nil, nil
	}
	a := &Anonymous{Enabled: c.Anonymous.Enabled}
	seen := map[string]bool{}
	for i, cond := range c.Anonymous.Conditions {
		switch {
		case !a.Enabled:
			return nil, fmt.Errorf("%s: anonymous.conditions need anonymous.enabled: true", path)
		case cond.Path == "":
			return nil, fmt.Errorf("%s: anonymous.conditions[%d].path is required", path, i)
		case seen[cond.Path]:
			return nil, fmt.Errorf("%s: anonymous.conditions[%d].path %q is listed twice", path, i, cond.Path)
		}
		seen[cond.Path] = true
		a.Paths = append(a.Paths, cond.Path)
	}
	return a, nil
}
