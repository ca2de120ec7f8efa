// Package externalsigner is idplane's client of an external service-account token signer: a
// process on a unix socket serving the ExternalJWTSigner gRPC service of k8s.io/externaljwt
// (KEP-740). The signer holds the private keys; the client asks it to sign token payloads, keeps
// the public keys it publishes (refreshed as its hint says, and when a token names a key not yet
// seen) and reads the longest token lifetime it signs.
package externalsigner

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	externaljwtv1 "k8s.io/externaljwt/apis/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/serviceaccount"
)

const (
	// DefaultCallTimeout bounds each call to the signer: a signer that does not answer fails the
	// TokenRequest with a 500 rather than holding it to the request timeout.
	DefaultCallTimeout = 10 * time.Second
	// retryInterval is how soon a failed key refresh is tried again; the keys already fetched
	// keep verifying meanwhile.
	retryInterval = 10 * time.Second
	// minRefreshInterval bounds how often the refresh hint, and tokens naming unknown keys, can
	// make the client fetch keys: a flood of tokens with made-up key IDs costs one fetch a second.
	minRefreshInterval = time.Second
	// maxKeyIDLength is the protocol's limit on key IDs.
	maxKeyIDLength = 1024
	// minMaxTokenExpiration is the shortest maximum lifetime a signer may announce: TokenRequest's
	// own minimum.
	minMaxTokenExpiration = 10 * time.Minute
)

// Config says where the signer listens and how the client times its calls.
type Config struct {
	// Socket is the path of the signer's unix socket.
	Socket string
	// CallTimeout bounds each call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Clock times the key refreshes; nil means the real clock.
	Clock clock.Clock
}

// Client signs tokens through the external signer and verifies them with its keys. It
// implements serviceaccount.Signer and serviceaccount.PublicKeys.
type Client struct {
	api           externaljwtv1.ExternalJWTSignerClient
	clock         clock.Clock
	callTimeout   time.Duration
	maxExpiration time.Duration

	keys atomic.Pointer[keySet]

	// fetchMu makes fetches one at a time; lastFetch is when the last one started, and
	// fetchesStarted counts them.
	fetchMu        sync.Mutex
	lastFetch      time.Time
	fetchesStarted atomic.Int64
}

var (
	_ serviceaccount.Signer     = (*Client)(nil)
	_ serviceaccount.PublicKeys = (*Client)(nil)
)

// keySet is one FetchKeys answer, checked.
type keySet struct {
	keys []serviceaccount.PublicKey
	byID map[string]serviceaccount.PublicKey
	// dataTimestamp is when the signer read the keys from its source of truth.
	dataTimestamp time.Time
	// refreshAt is when the signer's hint says to fetch again.
	refreshAt time.Time
}

// Start connects to the signer, fetches its keys and its metadata, and keeps the keys fresh
// until ctx ends, when the connection closes. A signer that does not answer, or answers
// something unusable, refuses the start.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	registerAll()
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	socket, err := filepath.Abs(cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("external signer socket %q: %w", cfg.Socket, err)
	}
	// Said at once rather than after a call timeout: nothing listens where there is no socket.
	if info, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("external signer socket: %w", err)
	} else if info.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("external signer socket %s is not a socket", socket)
	}
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		// A signer restarting is waited for, up to the call's timeout, rather than failed at once.
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		grpc.WithChainUnaryInterceptor(timeCalls),
	)
	if err != nil {
		return nil, fmt.Errorf("connecting to the external signer at %s: %w", socket, err)
	}
	c := &Client{api: externaljwtv1.NewExternalJWTSignerClient(conn), clock: cfg.Clock, callTimeout: cfg.CallTimeout}
	if err := c.init(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("external signer at %s: %w", socket, err)
	}
	go func() {
		defer conn.Close()
		c.keepFresh(ctx)
	}()
	return c, nil
}

// init fetches the keys and the metadata once.
func (c *Client) init(ctx context.Context) error {
	if err := c.refresh(ctx); err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	md, err := c.api.Metadata(callCtx, &externaljwtv1.MetadataRequest{})
	if err != nil {
		return fmt.Errorf("reading metadata: %w", err)
	}
	max := time.Duration(md.MaxTokenExpirationSeconds) * time.Second
	if max < minMaxTokenExpiration {
		return fmt.Errorf("max token life supported by the signer (%ds) is less than acceptable (min %ds)",
			md.MaxTokenExpirationSeconds, int64(minMaxTokenExpiration/time.Second))
	}
	c.maxExpiration = max
	return nil
}

// MaxTokenExpiration is the longest token lifetime the signer signs, from its metadata.
func (c *Client) MaxTokenExpiration() time.Duration { return c.maxExpiration }

// keepFresh fetches the keys when the signer's hint says, and soon again after a failure.
func (c *Client) keepFresh(ctx context.Context) {
	next := c.keys.Load().refreshAt.Sub(c.clock.Now())
	for {
		timer := c.clock.NewTimer(max(next, minRefreshInterval))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		if err := c.refresh(ctx); err != nil {
			klog.ErrorS(err, "Refreshing the external signer's keys failed; the keys fetched before keep verifying tokens", "retryIn", retryInterval)
			next = retryInterval
			continue
		}
		next = c.keys.Load().refreshAt.Sub(c.clock.Now())
	}
}

// refresh fetches the keys.
func (c *Client) refresh(ctx context.Context) error {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	return c.fetchLocked(ctx)
}

// refreshForUnknownKey fetches the keys for a caller that met a key ID not among them: at once
// if no fetch ran in the last minRefreshInterval, else once it has passed, and not at all if a
// fetch began while the caller waited its turn (that fetch saw whatever the caller would). Made-up
// key IDs thus cost one fetch a second however many tokens name them, and a key the signer has
// just started using is always found.
func (c *Client) refreshForUnknownKey(ctx context.Context) error {
	seen := c.fetchesStarted.Load()
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	if c.fetchesStarted.Load() != seen {
		return nil
	}
	if wait := c.lastFetch.Add(minRefreshInterval).Sub(c.clock.Now()); wait > 0 {
		timer := c.clock.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C():
		}
	}
	return c.fetchLocked(ctx)
}

// fetchLocked fetches the keys and takes them if they pass; fetchMu is held.
func (c *Client) fetchLocked(ctx context.Context) error {
	c.fetchesStarted.Add(1)
	now := c.clock.Now()
	c.lastFetch = now
	set, err := c.fetch(ctx, now)
	fetchKeysTotal.WithLabelValues(resultCode(err)).Inc()
	if err != nil {
		return fmt.Errorf("fetching keys: %w", err)
	}
	fetchKeysSuccess.SetToCurrentTime()
	fetchKeysData.Set(float64(set.dataTimestamp.Unix()))
	if old := c.keys.Load(); old == nil || !sameKeys(old, set) {
		klog.InfoS("External signer's keys", "keyIDs", keyIDs(set), "dataTimestamp", set.dataTimestamp, "refreshAt", set.refreshAt)
	}
	c.keys.Store(set)
	return nil
}

func (c *Client) fetch(ctx context.Context, now time.Time) (*keySet, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	resp, err := c.api.FetchKeys(ctx, &externaljwtv1.FetchKeysRequest{})
	if err != nil {
		return nil, err
	}
	return checkKeys(resp, now)
}

// checkKeys turns a FetchKeys answer into a key set, refusing the whole answer when any part of
// it is unusable: the keys fetched before stay in use.
func checkKeys(resp *externaljwtv1.FetchKeysResponse, now time.Time) (*keySet, error) {
	if resp.RefreshHintSeconds <= 0 {
		return nil, fmt.Errorf("invalid refresh hint (%ds)", resp.RefreshHintSeconds)
	}
	if len(resp.Keys) == 0 {
		return nil, errors.New("the signer published no keys")
	}
	if err := resp.DataTimestamp.CheckValid(); err != nil {
		return nil, fmt.Errorf("invalid data timestamp: %w", err)
	}
	set := &keySet{
		byID:          map[string]serviceaccount.PublicKey{},
		dataTimestamp: resp.DataTimestamp.AsTime(),
		refreshAt:     now.Add(time.Duration(resp.RefreshHintSeconds) * time.Second),
	}
	for i, k := range resp.Keys {
		if k == nil {
			return nil, fmt.Errorf("keys[%d] is empty", i)
		}
		if len(k.KeyId) == 0 || len(k.KeyId) > maxKeyIDLength {
			return nil, fmt.Errorf("keys[%d]: key ID of %d bytes (want 1 to %d)", i, len(k.KeyId), maxKeyIDLength)
		}
		if _, dup := set.byID[k.KeyId]; dup {
			return nil, fmt.Errorf("keys[%d]: key ID %q is listed twice", i, k.KeyId)
		}
		pub, err := x509.ParsePKIXPublicKey(k.Key)
		if err != nil {
			return nil, fmt.Errorf("keys[%d] (%q): %w", i, k.KeyId, err)
		}
		pk, err := serviceaccount.NewPublicKey(k.KeyId, pub)
		if err != nil {
			return nil, fmt.Errorf("keys[%d] (%q): %w", i, k.KeyId, err)
		}
		pk.ExcludeFromDiscovery = k.ExcludeFromOidcDiscovery
		set.keys = append(set.keys, pk)
		set.byID[pk.ID] = pk
	}
	return set, nil
}

func sameKeys(a, b *keySet) bool {
	if !a.dataTimestamp.Equal(b.dataTimestamp) || len(a.keys) != len(b.keys) {
		return false
	}
	for i := range a.keys {
		if a.keys[i].ID != b.keys[i].ID || a.keys[i].ExcludeFromDiscovery != b.keys[i].ExcludeFromDiscovery {
			return false
		}
	}
	return true
}

func keyIDs(s *keySet) []string {
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.ID
	}
	return ids
}

// Lookup returns the published key named kid, fetching the keys again first when it is not
// among those known.
func (c *Client) Lookup(ctx context.Context, kid string) (serviceaccount.PublicKey, bool) {
	if k, ok := c.keys.Load().byID[kid]; ok {
		return k, true
	}
	if err := c.refreshForUnknownKey(ctx); err != nil {
		klog.ErrorS(err, "Refreshing the external signer's keys for an unknown key ID failed", "keyID", kid)
	}
	k, ok := c.keys.Load().byID[kid]
	return k, ok
}

// Accepted returns every published key.
func (c *Client) Accepted() []serviceaccount.PublicKey { return c.keys.Load().keys }

// FreshFor is the time left until the signer's refresh hint.
func (c *Client) FreshFor() time.Duration {
	return max(0, c.keys.Load().refreshAt.Sub(c.clock.Now()))
}

// header is everything a signer's JWT header may hold.
type header struct {
	Algorithm string `json:"alg"`
	KeyID     string `json:"kid"`
	Type      string `json:"typ"`
}

// Sign asks the signer to sign payload and assembles the token. The token is checked before it
// is handed out: its header as the protocol demands, signed by a published key that is not
// excluded from discovery, and its signature verifying with that key, so a misbehaving signer
// yields an error rather than tokens that would not authenticate.
func (c *Client) Sign(ctx context.Context, payload []byte) (string, error) {
	token, err := c.sign(ctx, payload)
	signTotal.WithLabelValues(resultCode(err)).Inc()
	return token, err
}

func (c *Client) sign(ctx context.Context, payload []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	claims := base64.RawURLEncoding.EncodeToString(payload)
	resp, err := c.api.Sign(ctx, &externaljwtv1.SignJWTRequest{Claims: claims})
	if err != nil {
		return "", fmt.Errorf("external signer: %w", err)
	}
	h, err := parseHeader(resp.Header)
	if err != nil {
		return "", fmt.Errorf("external signer returned a bad header: %w", err)
	}
	key, ok := c.Lookup(ctx, h.KeyID)
	switch {
	case !ok:
		return "", fmt.Errorf("external signer signed with key %q, which it does not publish", h.KeyID)
	case key.ExcludeFromDiscovery:
		return "", fmt.Errorf("external signer signed with key %q, which is excluded from OIDC discovery", h.KeyID)
	case string(key.Algorithm) != h.Algorithm:
		return "", fmt.Errorf("external signer signed with %s, but key %q is a %s key", h.Algorithm, h.KeyID, key.Algorithm)
	case resp.Signature == "":
		return "", errors.New("external signer returned an empty signature")
	}
	token := resp.Header + "." + claims + "." + resp.Signature
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{key.Algorithm})
	if err != nil {
		return "", fmt.Errorf("external signer returned a malformed token: %w", err)
	}
	if _, err := jws.Verify(key.Key); err != nil {
		return "", fmt.Errorf("external signer's signature does not verify with key %q: %w", h.KeyID, err)
	}
	return token, nil
}

// parseHeader decodes a JWT header, which may hold only alg, kid and typ.
func parseHeader(encoded string) (header, error) {
	var h header
	data, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return h, fmt.Errorf("not base64url: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, err
	}
	switch {
	case h.Type != "JWT":
		return h, fmt.Errorf("typ is %q, want JWT", h.Type)
	case h.KeyID == "":
		return h, errors.New("no kid")
	case len(h.KeyID) > maxKeyIDLength:
		return h, fmt.Errorf("kid of %d bytes, longer than %d", len(h.KeyID), maxKeyIDLength)
	case !serviceaccount.IsAcceptedAlgorithm(h.Algorithm):
		return h, fmt.Errorf("alg %q is not one of RS256, ES256, ES384, ES512", h.Algorithm)
	}
	return h, nil
}
