package kmsplugin

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"sync"

	kmsservice "k8s.io/kms/pkg/service"
)

// apiVersion is the KMS API version Status reports; the API server refuses any other.
const apiVersion = "v2"

// Service wraps and unwraps the API server's data keys with the keys of a key file. The file is
// read again on every Status call, which the API server makes about once a minute: a rotation is
// writing the new key on top of the file, and the API server notices the new key ID at its next
// poll.
type Service struct {
	path string

	mu      sync.RWMutex
	keys    *keySet
	loadErr error // why the last read of the file failed; nil once it reads again
}

var _ kmsservice.Service = (*Service)(nil)

// NewService reads the key file; a file that does not load refuses the start.
func NewService(keyFile string) (*Service, error) {
	keys, err := readKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	return &Service{path: keyFile, keys: keys}, nil
}

// reload reads the key file again. A file that no longer loads keeps the keys already read, so
// nothing stored becomes unreadable, and Status reports the failure until the file is fixed.
func (s *Service) reload() {
	keys, err := readKeyFile(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadErr = err
	if err == nil {
		s.keys = keys
	}
}

func (s *Service) current() (*keySet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys, s.loadErr
}

// Status reports the current key's ID; its healthz is "ok" only while the key file loads.
func (s *Service) Status(_ context.Context) (*kmsservice.StatusResponse, error) {
	s.reload()
	keys, err := s.current()
	healthz := "ok"
	if err != nil {
		healthz = err.Error()
	}
	return &kmsservice.StatusResponse{Version: apiVersion, Healthz: healthz, KeyID: keys.primary().id}, nil
}

// Encrypt wraps data with the current key. The key ID is authenticated with the ciphertext, so a
// ciphertext presented under another key's ID does not decrypt.
func (s *Service) Encrypt(_ context.Context, _ string, data []byte) (*kmsservice.EncryptResponse, error) {
	keys, _ := s.current()
	k := keys.primary()
	aead, err := newAEAD(k.secret)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(data)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("generating nonce: %w", err)
	}
	return &kmsservice.EncryptResponse{Ciphertext: aead.Seal(nonce, nonce, data, []byte(k.id)), KeyID: k.id}, nil
}

// Decrypt unwraps a ciphertext with the key it names. A key ID the file does not hold makes the
// file read again first, in case it was rotated since the last Status call.
func (s *Service) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	keys, _ := s.current()
	secret, ok := keys.byID[req.KeyID]
	if !ok {
		s.reload()
		keys, _ = s.current()
		if secret, ok = keys.byID[req.KeyID]; !ok {
			return nil, fmt.Errorf("key ID %q is not in the key file %s: the key that wrapped this data was removed", req.KeyID, s.path)
		}
	}
	aead, err := newAEAD(secret)
	if err != nil {
		return nil, err
	}
	if len(req.Ciphertext) < aead.NonceSize() {
		return nil, fmt.Errorf("ciphertext of %d bytes is too short", len(req.Ciphertext))
	}
	nonce, sealed := req.Ciphertext[:aead.NonceSize()], req.Ciphertext[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, []byte(req.KeyID))
	if err != nil {
		return nil, fmt.Errorf("decrypting with key %q: %w", req.KeyID, err)
	}
	return plain, nil
}

func newAEAD(secret []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("creating AES cipher: %w", err)
	}
	return cipher.NewGCM(block)
}
