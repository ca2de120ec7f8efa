// Package signertest is an ExternalJWTSigner for tests: ECDSA P-256 keys in memory, served on a
// unix socket, with knobs to rotate keys, exclude them from discovery, misbehave and stop.
package signertest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	externaljwtv1 "k8s.io/externaljwt/apis/v1"
)

// Signer is the test signer. Its exported fields may be changed while it serves, under Lock.
type Signer struct {
	externaljwtv1.UnimplementedExternalJWTSignerServer

	sync.Mutex
	// MaxTokenExpirationSeconds is what Metadata answers.
	MaxTokenExpirationSeconds int64
	// RefreshHintSeconds is what FetchKeys answers.
	RefreshHintSeconds int64
	// SignWithKeyID, when set, names the key Sign claims in its header, whatever signs.
	SignWithKeyID string
	// HeaderOverride, when set, is returned by Sign as the header (base64url of it).
	HeaderOverride string
	// FetchError and SignError, when set, are what those calls answer.
	FetchError, SignError error

	keys    []*key
	current *key
	// changed is when the keys last changed: FetchKeys' data timestamp.
	changed    time.Time
	FetchCalls int

	socket string
	server *grpc.Server
	done   chan struct{}
}

type key struct {
	id       string
	private  *ecdsa.PrivateKey
	excluded bool
}

// New returns a signer with one key, signing tokens of up to a day, asking for a key refresh
// every minute.
func New() (*Signer, error) {
	s := &Signer{MaxTokenExpirationSeconds: 24 * 3600, RefreshHintSeconds: 60}
	if _, err := s.Rotate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Rotate adds a new key and signs with it from now on; the old keys stay published. It returns
// the new key's ID.
func (s *Signer) Rotate() (string, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	k := &key{id: "test-" + base64.RawURLEncoding.EncodeToString(sum[:9]), private: priv}
	s.Lock()
	defer s.Unlock()
	s.keys = append(s.keys, k)
	s.current = k
	s.changed = time.Now()
	return k.id, nil
}

// CurrentKeyID is the ID of the key that signs.
func (s *Signer) CurrentKeyID() string {
	s.Lock()
	defer s.Unlock()
	return s.current.id
}

// Exclude marks the key excluded from OIDC discovery.
func (s *Signer) Exclude(id string) {
	s.Lock()
	defer s.Unlock()
	for _, k := range s.keys {
		if k.id == id {
			k.excluded = true
			s.changed = time.Now()
		}
	}
}

// Drop stops publishing the key.
func (s *Signer) Drop(id string) {
	s.Lock()
	defer s.Unlock()
	for i, k := range s.keys {
		if k.id == id {
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			s.changed = time.Now()
			return
		}
	}
}

// Serve listens on the unix socket and serves until Stop.
func (s *Signer) Serve(socket string) error {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	s.socket = socket
	s.server = grpc.NewServer()
	s.done = make(chan struct{})
	externaljwtv1.RegisterExternalJWTSignerServer(s.server, s)
	go func() {
		defer close(s.done)
		_ = s.server.Serve(ln)
	}()
	return nil
}

// Stop stops serving and removes the socket.
func (s *Signer) Stop() {
	if s.server == nil {
		return
	}
	s.server.Stop()
	<-s.done
	s.server = nil
}

// Sign signs the claims with the current key.
func (s *Signer) Sign(_ context.Context, req *externaljwtv1.SignJWTRequest) (*externaljwtv1.SignJWTResponse, error) {
	s.Lock()
	defer s.Unlock()
	if s.SignError != nil {
		return nil, s.SignError
	}
	payload, err := base64.RawURLEncoding.DecodeString(req.Claims)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "claims are not base64url: %v", err)
	}
	kid := s.current.id
	if s.SignWithKeyID != "" {
		kid = s.SignWithKeyID
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: s.current.private, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return nil, err
	}
	compact, err := jws.CompactSerialize()
	if err != nil {
		return nil, err
	}
	parts := strings.Split(compact, ".")
	if parts[1] != req.Claims {
		return nil, errors.New("payload encoded differently from the request")
	}
	header := parts[0]
	if s.HeaderOverride != "" {
		header = base64.RawURLEncoding.EncodeToString([]byte(s.HeaderOverride))
	}
	return &externaljwtv1.SignJWTResponse{Header: header, Signature: parts[2]}, nil
}

// FetchKeys publishes every key.
func (s *Signer) FetchKeys(context.Context, *externaljwtv1.FetchKeysRequest) (*externaljwtv1.FetchKeysResponse, error) {
	s.Lock()
	defer s.Unlock()
	s.FetchCalls++
	if s.FetchError != nil {
		return nil, s.FetchError
	}
	resp := &externaljwtv1.FetchKeysResponse{DataTimestamp: timestamppb.New(s.changed), RefreshHintSeconds: s.RefreshHintSeconds}
	for _, k := range s.keys {
		der, err := x509.MarshalPKIXPublicKey(k.private.Public())
		if err != nil {
			return nil, fmt.Errorf("encoding key %s: %w", k.id, err)
		}
		resp.Keys = append(resp.Keys, &externaljwtv1.Key{KeyId: k.id, Key: der, ExcludeFromOidcDiscovery: k.excluded})
	}
	return resp, nil
}

// Metadata answers the maximum token lifetime.
func (s *Signer) Metadata(context.Context, *externaljwtv1.MetadataRequest) (*externaljwtv1.MetadataResponse, error) {
	s.Lock()
	defer s.Unlock()
	return &externaljwtv1.MetadataResponse{MaxTokenExpirationSeconds: s.MaxTokenExpirationSeconds}, nil
}
