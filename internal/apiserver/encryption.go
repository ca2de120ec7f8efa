package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	storagevalue "k8s.io/apiserver/pkg/storage/value"
	"sigs.k8s.io/yaml"

	"github.com/idplane/idplane/internal/pki"
)

// EncryptionOptions say how objects are encrypted before they reach etcd.
type EncryptionOptions struct {
	// ProviderConfigFile is an EncryptionConfiguration (apiserver.config.k8s.io/v1); empty means
	// the one idplane generates in <data-dir>/pki, which encrypts secrets.
	ProviderConfigFile string
	// AutomaticReload reads ProviderConfigFile again when it changes, without a restart.
	AutomaticReload bool
}

// generatedEncryptionConfig is the file, under the PKI directory, that holds the key idplane
// generates when no --encryption-provider-config is given.
const generatedEncryptionConfig = "encryption-config.yaml"

// AddFlags registers the flags.
func (e *EncryptionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&e.ProviderConfigFile, "encryption-provider-config", e.ProviderConfigFile,
		"EncryptionConfiguration file (apiserver.config.k8s.io/v1) saying which resources are encrypted in etcd and with which keys "+
			"(providers aescbc, aesgcm, secretbox, identity, and kms apiVersion v2 through a KMS plugin, e.g. idplane kms-plugin). Default: <data-dir>/pki/"+generatedEncryptionConfig+", "+
			"generated at first start, encrypting secrets with secretbox.")
	fs.BoolVar(&e.AutomaticReload, "encryption-provider-config-automatic-reload", e.AutomaticReload,
		"Read --encryption-provider-config again when it changes on disk (checked every minute) instead of only at start.")
}

// Validate reports invalid combinations; the file itself is checked when the server starts.
func (e *EncryptionOptions) Validate() []error {
	if e.AutomaticReload && e.ProviderConfigFile == "" {
		return []error{errors.New("--encryption-provider-config-automatic-reload needs --encryption-provider-config: the generated configuration never changes")}
	}
	return nil
}

// configFile returns the encryption configuration the storage layer is to load, generating the
// default one first when no file is given.
func (e *EncryptionOptions) configFile(files pki.Files) (string, error) {
	path := e.ProviderConfigFile
	if path == "" {
		path = filepath.Join(files.Dir, generatedEncryptionConfig)
		if err := ensureEncryptionConfig(path); err != nil {
			return "", err
		}
	}
	return path, nil
}

// loadSecretsTransformer loads the encryption configuration at path for the start-up check and
// returns the transformer it gives secrets. KMS providers connect to their plugins and poll them
// until stop is called; the storage layer loads the file again for itself, with its own
// connections and health checks.
func loadSecretsTransformer(path string, reload bool) (storagevalue.Transformer, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, reload, "idplane")
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("encryption configuration %s: %w", path, err)
	}
	return encryptionconfig.StaticTransformers(cfg.Transformers).TransformerForResource(schema.GroupResource{Resource: "secrets"}), cancel, nil
}

// secretsKeyPrefix is where the storage layer keeps secrets in etcd. The check below runs before
// the storage layer is configured, so it is named from the same prefix rather than read from it.
const secretsKeyPrefix = storagePrefix + "/secrets/"

// checkStoredSecrets refuses to start when a secret in etcd cannot be read with the encryption
// configuration, typically a replica that generated its own key or a rotation that dropped the
// old key too early: the storage layer would retry listing secrets forever and the server would
// never turn ready, with the cause only in its log.
func checkStoredSecrets(ctx context.Context, etcd *clientv3.Client, secrets storagevalue.Transformer, configPath string) error {
	var unreadable []string
	var firstErr error
	total := 0
	from, end := secretsKeyPrefix, clientv3.GetPrefixRangeEnd(secretsKeyPrefix)
	for {
		resp, err := etcd.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(500))
		if err != nil {
			return fmt.Errorf("reading secrets from etcd: %w", err)
		}
		for _, kv := range resp.Kvs {
			total++
			data, _, err := secrets.TransformFromStorage(ctx, kv.Value, storagevalue.DefaultContext(kv.Key))
			if err == nil {
				// identity passes anything through: only decoding shows it was not the right provider.
				_, _, err = codecs.UniversalDeserializer().Decode(data, nil, nil)
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				unreadable = append(unreadable, strings.TrimPrefix(string(kv.Key), secretsKeyPrefix))
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if len(unreadable) > 0 {
		return fmt.Errorf("%d of %d secrets in etcd (%s first) cannot be decrypted with the encryption configuration %s: "+
			"servers sharing an etcd must share one configuration (copy <data-dir>/pki/%s or pass --encryption-provider-config), "+
			"and a key may leave the configuration only once every secret was rewritten with another; "+
			"with a kms provider its plugin must be running and hold the key (first error: %v)",
			len(unreadable), total, unreadable[0], configPath, generatedEncryptionConfig, firstErr)
	}
	return nil
}

// ensureEncryptionConfig writes, unless it exists, a configuration that encrypts secrets with a
// new random secretbox key and still reads secrets stored in plain text by an older data directory.
// An existing file is never rewritten: losing its key would lose every secret.
//
// secretbox (XSalsa20-Poly1305) rather than aescbc or aesgcm: it authenticates what it decrypts,
// which CBC does not (padding oracles), and its 24-byte random nonces make no demand on rotation,
// where aesgcm's 12-byte ones call for a new key every 200,000 writes. Only secrets are listed, as
// upstream encrypts only what the configuration names: they are what the data directory is asked
// to protect; GMSA credential specs name accounts, not passwords.
func ensureEncryptionConfig(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading encryption configuration: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generating the secrets encryption key: %w", err)
	}
	cfg := apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "EncryptionConfiguration"},
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{
				{Secretbox: &apiserverv1.SecretboxConfiguration{Keys: []apiserverv1.Key{{Name: "key1", Secret: base64.StdEncoding.EncodeToString(key)}}}},
				{Identity: &apiserverv1.IdentityConfiguration{}},
			},
		}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding encryption configuration: %w", err)
	}
	return pki.WriteFile(path, data, 0o600)
}

// verifyStoredSecrets runs checkStoredSecrets on the server's etcd.
func verifyStoredSecrets(ctx context.Context, o *Options, etcdServers []string, secrets storagevalue.Transformer, configPath string) error {
	client, err := newEtcdClient(etcdServers, o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile)
	if err != nil {
		return err
	}
	defer client.Close()
	return checkStoredSecrets(ctx, client, secrets, configPath)
}
