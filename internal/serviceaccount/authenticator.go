package serviceaccount

import (
	"context"
	"crypto"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejson "github.com/go-jose/go-jose/v4/json"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// MaxTokenLength bounds what the authenticator parses: a real token is well under 2 KiB.
const MaxTokenLength = 16 * 1024

// clockSkew is how far the clocks of the issuing and verifying servers may disagree.
const clockSkew = time.Minute

// Getter finds the objects a token names. Implementations read from informers, not from the store
// on every request.
type Getter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// AuthenticatorConfig is what the service-account token authenticator accepts.
type AuthenticatorConfig struct {
	// Issuers are accepted in the "iss" claim of bound tokens.
	Issuers []string
	Keys    PublicKeys
	// APIAudiences are the audiences the API server identifies as; a token must name one of them
	// unless the caller asks for other audiences (TokenReview's spec.audiences).
	APIAudiences authenticator.Audiences
	Getter       Getter
	Clock        clock.PassiveClock
	// CacheSize bounds the cache of verified tokens (their claims, keyed by the token's hash);
	// 0 disables it. Entries go with the objects the token names once WatchObjects is called.
	CacheSize int
}

// Authenticator authenticates service-account tokens: bound tokens of the accepted issuers and
// legacy tokens held in secrets. A token of another issuer is not its business and is passed on.
type Authenticator struct {
	issuers   sets.Set[string]
	keys      PublicKeys
	audiences authenticator.Audiences
	getter    Getter
	clock     clock.PassiveClock
	cache     *tokenCache
}

// NewAuthenticator returns the authenticator for c.
func NewAuthenticator(c AuthenticatorConfig) *Authenticator {
	a := &Authenticator{
		issuers:   sets.New(c.Issuers...),
		keys:      c.Keys,
		audiences: c.APIAudiences,
		getter:    c.Getter,
		clock:     c.Clock,
	}
	if c.CacheSize > 0 {
		a.cache = newTokenCache(c.CacheSize)
	}
	return a
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken answers (nil, false, nil) for a token that is not a service-account token, and
// an error naming the reason for one that is but fails any check.
func (a *Authenticator) AuthenticateToken(ctx context.Context, raw string) (*authenticator.Response, bool, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, false, nil
	}
	// A token that verified before is served from the cache; none longer than ours can be in it.
	if a.cache == nil || len(raw) > MaxTokenLength {
		claims, ok, err := a.parse(ctx, raw)
		if !ok || err != nil {
			return nil, ok, err
		}
		return a.authenticateVerified(ctx, raw, claims)
	}
	h := hashToken(raw)
	if claims, ok := a.cache.get(h, a.clock.Now()); ok {
		if a.keyAccepted(ctx, claims) {
			return a.authenticateVerified(ctx, raw, claims)
		}
		// The key that signed it is no longer accepted: the uncached path says why.
		a.cache.remove(h)
	}
	generation := a.cache.begin()
	claims, ok, err := a.parse(ctx, raw)
	if !ok || err != nil {
		return nil, ok, err
	}
	resp, ok, err := a.authenticateVerified(ctx, raw, claims)
	if ok && err == nil {
		a.cache.add(h, claims, generation)
	}
	return resp, ok, err
}

// parse verifies the signature of a token of an accepted issuer and decodes its claims; it
// answers (nil, false, nil) for a token of another issuer. The claims are decoded once, from the
// payload the signature is then checked over.
func (a *Authenticator) parse(ctx context.Context, raw string) (*verifiedClaims, bool, error) {
	// Another issuer's token is left to the JWT issuers after this authenticator, whatever its
	// length: an identity provider's token with many group claims may be long. Only the issuer
	// claim is decoded before the length of one of ours is bounded, or when the token does not
	// parse as one of ours.
	var tok *jose.JSONWebSignature
	claims := &tokenClaims{}
	if len(raw) <= MaxTokenLength {
		var err error
		if tok, err = jose.ParseSignedCompact(raw, acceptedAlgorithms); err == nil {
			err = josejson.Unmarshal(tok.UnsafePayloadWithoutVerification(), claims)
		}
		if err != nil {
			tok = nil
		}
	}
	iss, ok := claims.Issuer, claims.Issuer != ""
	if tok == nil {
		iss, ok = unverifiedIssuer(raw)
	}
	if !ok || (iss != LegacyIssuer && !a.issuers.Has(iss)) {
		// Another authenticator may take the token, so this is not an error; the request's log
		// line then says only "invalid bearer token", and this says why it was not one of ours
		// (for example a token from before the issuer changed).
		if ok {
			klog.V(2).InfoS("Bearer token is not a service-account token of this server: its issuer is not accepted", "issuer", iss, "acceptedIssuers", sets.List(a.issuers))
		} else {
			klog.V(2).InfoS("Bearer token is not a service-account token: it is a JWT without an issuer")
		}
		return nil, false, nil
	}
	if len(raw) > MaxTokenLength {
		return nil, false, fmt.Errorf("service account token is %d bytes long, more than %d", len(raw), MaxTokenLength)
	}
	if tok == nil {
		// Say why it did not parse.
		if _, err := jose.ParseSignedCompact(raw, acceptedAlgorithms); err != nil {
			return nil, false, fmt.Errorf("malformed service account token: %w", err)
		}
		return nil, false, errors.New("malformed service account token: its claims do not decode")
	}
	v := &verifiedClaims{public: claims.Claims}
	if iss == LegacyIssuer {
		v.legacy = &claims.legacyClaims
	} else {
		v.bound = claims.privateClaims
	}
	var err error
	if v.key, err = a.verify(ctx, tok); err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// tokenClaims are every claim this authenticator reads, decoded in one pass as go-jose's jwt
// package decodes them (field names match exactly).
type tokenClaims struct {
	jwt.Claims
	privateClaims
	legacyClaims
}

// unverifiedIssuer reads "iss" from a compact JWS (three parts) without verifying it, only to
// decide whether a token that is not one of ours in form is one this authenticator answers for.
func unverifiedIssuer(raw string) (string, bool) {
	parts := strings.SplitN(raw, ".", 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := josejson.Unmarshal(payload, &claims); err != nil || claims.Issuer == "" {
		return "", false
	}
	return claims.Issuer, true
}

// authenticateVerified runs every check that depends on more than the token's bytes.
func (a *Authenticator) authenticateVerified(ctx context.Context, raw string, v *verifiedClaims) (*authenticator.Response, bool, error) {
	if v.legacy != nil {
		return a.authenticateLegacy(ctx, raw, &v.public, v.legacy)
	}
	return a.authenticateBound(ctx, &v.public, &v.bound)
}

var errBadSignature = errors.New("service account token signature is invalid")

// verify checks the signature with the key the token names, or with every accepted key when it
// names none, and returns the key that verified it. The signature covers the payload the claims
// were decoded from: go-jose verifies the bytes it parsed.
func (a *Authenticator) verify(ctx context.Context, tok *jose.JSONWebSignature) (PublicKey, error) {
	if len(tok.Signatures) != 1 {
		return PublicKey{}, errors.New("service account token must have exactly one signature")
	}
	kid := tok.Signatures[0].Header.KeyID
	if kid != "" {
		k, ok := a.keys.Lookup(ctx, kid)
		if !ok {
			return PublicKey{}, fmt.Errorf("service account token is signed by key %q, which is not an accepted key", kid)
		}
		if _, err := tok.Verify(k.Key); err != nil {
			return PublicKey{}, errBadSignature
		}
		return k, nil
	}
	for _, k := range a.keys.Accepted() {
		if _, err := tok.Verify(k.Key); err == nil {
			return k, nil
		}
	}
	return PublicKey{}, errBadSignature
}

// keyAccepted says whether the key that verified a cached token is still accepted: a key
// source that rotates (an external signer) may drop it, and its tokens then go with it.
func (a *Authenticator) keyAccepted(ctx context.Context, v *verifiedClaims) bool {
	k, ok := a.keys.Lookup(ctx, v.key.ID)
	if !ok {
		return false
	}
	same, ok := k.Key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && same.Equal(v.key.Key)
}

func (a *Authenticator) authenticateBound(ctx context.Context, public *jwt.Claims, private *privateClaims) (*authenticator.Response, bool, error) {
	now := a.clock.Now()
	if public.Expiry == nil {
		return nil, false, errors.New("service account token has no expiry")
	}
	if err := public.ValidateWithLeeway(jwt.Expected{Time: now}, clockSkew); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, false, errors.New("service account token has expired")
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return nil, false, errors.New("service account token is not valid yet")
		}
		return nil, false, fmt.Errorf("service account token is invalid: %w", err)
	}
	audiences, err := a.matchAudiences(ctx, public.Audience)
	if err != nil {
		return nil, false, err
	}
	k := private.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" {
		return nil, false, errors.New("service account token has no kubernetes.io claim naming its service account")
	}
	if public.Subject != apiserviceaccount.MakeUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, fmt.Errorf("service account token subject %q does not match its service account %s/%s", public.Subject, k.Namespace, k.ServiceAccount.Name)
	}
	sa, err := a.getter.ServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err := live("service account", k.Namespace+"/"+k.ServiceAccount.Name, k.ServiceAccount.UID, sa, err); err != nil {
		return nil, false, err
	}
	info := apiserviceaccount.ServiceAccountInfo{Namespace: k.Namespace, Name: sa.Name, UID: string(sa.UID)}
	if public.ID != "" {
		info.CredentialID = "JTI=" + public.ID
	}
	switch {
	case k.Pod != nil:
		pod, err := a.getter.Pod(ctx, k.Namespace, k.Pod.Name)
		if err := live("pod", k.Namespace+"/"+k.Pod.Name, k.Pod.UID, pod, err); err != nil {
			return nil, false, err
		}
		info.PodName, info.PodUID = pod.Name, string(pod.UID)
		if k.Node != nil {
			info.NodeName, info.NodeUID = k.Node.Name, string(k.Node.UID)
		}
	case k.Secret != nil:
		secret, err := a.getter.Secret(ctx, k.Namespace, k.Secret.Name)
		if err := live("secret", k.Namespace+"/"+k.Secret.Name, k.Secret.UID, secret, err); err != nil {
			return nil, false, err
		}
	case k.Node != nil:
		node, err := a.getter.Node(ctx, k.Node.Name)
		if err := live("node", k.Node.Name, k.Node.UID, node, err); err != nil {
			return nil, false, err
		}
		info.NodeName, info.NodeUID = node.Name, string(node.UID)
	}
	if k.WarnAfter != nil && now.After(k.WarnAfter.Time()) {
		staleTokens.Inc()
	} else {
		validTokens.Inc()
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: audiences}, true, nil
}

// live says why a token's object no longer vouches for it: gone, replaced by another object of the
// same name (another UID), or being deleted.
func live(kind, name string, uid types.UID, obj metav1.Object, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s referenced by the token has been deleted", kind, name)
	case err != nil:
		return fmt.Errorf("looking up %s %s: %w", kind, name, err)
	case uid != "" && obj.GetUID() != uid:
		return fmt.Errorf("%s %s has UID %s, not the UID %s the token names: it was deleted and recreated", kind, name, obj.GetUID(), uid)
	case obj.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s %s referenced by the token is being deleted", kind, name)
	}
	return nil
}

func (a *Authenticator) authenticateLegacy(ctx context.Context, raw string, public *jwt.Claims, c *legacyClaims) (*authenticator.Response, bool, error) {
	if c.Namespace == "" || c.ServiceAccountName == "" || c.SecretName == "" {
		return nil, false, errors.New("legacy service account token is missing its namespace, service account or secret claim")
	}
	if public.Subject != apiserviceaccount.MakeUsername(c.Namespace, c.ServiceAccountName) {
		return nil, false, fmt.Errorf("legacy service account token subject %q does not match its service account %s/%s", public.Subject, c.Namespace, c.ServiceAccountName)
	}
	// Legacy tokens name no audience: they are good for the API server's own audiences only.
	audiences, err := a.matchAudiences(ctx, jwt.Audience(a.audiences))
	if err != nil {
		return nil, false, err
	}
	secret, err := a.getter.Secret(ctx, c.Namespace, c.SecretName)
	if err := live("secret", c.Namespace+"/"+c.SecretName, "", secret, err); err != nil {
		return nil, false, err
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(raw)) != 1 {
		return nil, false, fmt.Errorf("legacy service account token no longer matches secret %s/%s", c.Namespace, c.SecretName)
	}
	sa, err := a.getter.ServiceAccount(ctx, c.Namespace, c.ServiceAccountName)
	if err := live("service account", c.Namespace+"/"+c.ServiceAccountName, types.UID(c.ServiceAccountUID), sa, err); err != nil {
		return nil, false, err
	}
	if !apiserviceaccount.IsServiceAccountToken(secret, sa) {
		return nil, false, fmt.Errorf("secret %s/%s does not hold a token of service account %s", c.Namespace, c.SecretName, sa.Name)
	}
	legacyTokens.Inc()
	info := apiserviceaccount.ServiceAccountInfo{Namespace: c.Namespace, Name: sa.Name, UID: string(sa.UID)}
	return &authenticator.Response{User: info.UserInfo(), Audiences: audiences}, true, nil
}

// matchAudiences intersects the token's audiences with those the caller asked for, or the API
// audiences when it asked for none; an empty intersection refuses the token.
func (a *Authenticator) matchAudiences(ctx context.Context, tokenAudiences jwt.Audience) (authenticator.Audiences, error) {
	want, ok := authenticator.AudiencesFrom(ctx)
	if !ok || len(want) == 0 {
		want = a.audiences
	}
	got := want.Intersect(authenticator.Audiences(tokenAudiences))
	if len(got) == 0 {
		return nil, fmt.Errorf("service account token audiences %q match none of the accepted audiences %q", []string(tokenAudiences), []string(want))
	}
	return got, nil
}
