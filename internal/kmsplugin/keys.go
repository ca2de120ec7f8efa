// Package kmsplugin is a KMS v2 plugin (the k8s.io/kms gRPC service) that wraps data keys with
// local AES-256-GCM keys read from a file. It is a reference and development plugin: the keys sit
// on the same machine as the data they protect, so it guards a copy of etcd or of its backups,
// not a compromised host. Production clusters point the API server at their cloud's or Vault's
// KMS plugin instead.
package kmsplugin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// keySize is AES-256's.
const keySize = 32

// key is one key encryption key of the file.
type key struct {
	id     string
	secret []byte
}

// keySet is the file's keys: the first encrypts, every one decrypts, so a rotation adds the new
// key on top and drops the old one only once nothing is wrapped with it.
type keySet struct {
	keys []key
	byID map[string][]byte
}

func (s *keySet) primary() key { return s.keys[0] }

// KeyID names a key without revealing it: the API server stores the ID beside every object it
// encrypts and compares it across Status calls to notice a rotation, so it is derived from the
// key rather than chosen, and two different keys can never share one.
func KeyID(secret []byte) string {
	sum := sha256.Sum256(append([]byte("idplane-kms-plugin-key-id\x00"), secret...))
	return "local-aes-gcm:" + hex.EncodeToString(sum[:12])
}

// readKeyFile loads a key file: one base64-encoded 32-byte key per line, the first the current
// one; blank lines and lines starting with # are ignored. A file others can read is refused: it
// holds the keys to every secret.
func readKeyFile(path string) (*keySet, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is accessible by group or others (mode %#o): allow only its owner (chmod 600)", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	set := &keySet{byID: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		secret, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, fmt.Errorf("key file %s line %d: not base64: %w", path, line, err)
		}
		if len(secret) != keySize {
			return nil, fmt.Errorf("key file %s line %d: key is %d bytes, want %d (head -c 32 /dev/urandom | base64)", path, line, len(secret), keySize)
		}
		id := KeyID(secret)
		if _, dup := set.byID[id]; dup {
			return nil, fmt.Errorf("key file %s line %d: the same key is listed twice", path, line)
		}
		set.keys = append(set.keys, key{id: id, secret: secret})
		set.byID[id] = secret
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	if len(set.keys) == 0 {
		return nil, fmt.Errorf("key file %s holds no key (head -c 32 /dev/urandom | base64 > %s)", path, path)
	}
	return set, nil
}
