package credentials

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// servingRequester gets the node's kubelet-serving certificate. Unlike client-go's manager,
// which makes a new key and a new CSR at every attempt, it keeps the key of a request that is not
// answered yet in DIR/pki and names the CSR after that key: an agent restarted while its request
// waits for an approver finds the same CSR again instead of leaving one more behind. It waits
// for the answer for as long as it runs, and tells at info level how to give it.
type servingRequester struct {
	template *x509.CertificateRequest
	store    certificate.Store
	// keyFile holds the key of the request in flight; it goes once the certificate is stored,
	// so that each renewal has a key of its own.
	keyFile string
	client  func() (kubernetes.Interface, error)
	clock   clock.PassiveClock

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	current *tls.Certificate
}

// approvalHint is what finishes a pending serving request; %s is the CSR's name.
const approvalHint = "kubectl certificate approve %s (or run idplane server with --approve-kubelet-serving)"

func newServingRequester(ctx context.Context, template *x509.CertificateRequest, store certificate.Store, keyFile string,
	client func() (kubernetes.Interface, error), clk clock.PassiveClock) *servingRequester {
	r := &servingRequester{template: template, store: store, keyFile: keyFile, client: client, clock: clk}
	r.ctx, r.cancel = context.WithCancel(ctx)
	if cur, err := store.Current(); err == nil {
		r.current = cur
	}
	return r
}

// Current is the stored certificate while it is unexpired.
func (r *servingRequester) Current() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || r.current.Leaf == nil || r.clock.Now().After(r.current.Leaf.NotAfter) {
		return nil
	}
	return r.current
}

// Stop ends a request in flight; RotateCerts returns false then.
func (r *servingRequester) Stop() { r.cancel() }

// RotateCerts requests a certificate for the pending key (a new one when there is none),
// reusing the CSR already made for it, and waits until it is issued: true then; false with no
// error when the agent stops first.
func (r *servingRequester) RotateCerts() (bool, error) {
	ctx, logger := r.ctx, klog.FromContext(r.ctx)
	key, keyPEM, err := r.pendingKey()
	if err != nil {
		return false, err
	}
	csrPEM, err := certutil.MakeCSRFromTemplate(key, r.template)
	if err != nil {
		return false, fmt.Errorf("making the kubelet-serving CSR: %w", err)
	}
	client, err := r.client()
	if err != nil {
		return false, err
	}
	name, err := r.requestName(key)
	if err != nil {
		return false, err
	}
	usages := certificate.DefaultKubeletServingGetUsages(key)
	// With a name, client-go reuses an existing CSR of that name once it has checked that our
	// key signed it, for the same subject and signer.
	reqName, reqUID, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name, certificatesv1.KubeletServingSignerName, nil, usages, key)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		err = fmt.Errorf("requesting the kubelet-serving certificate (CSR %s): %w", name, err)
		// client-go says so in words alone: a CSR of that name that our key did not sign, or
		// whose certificate expired, can never be ours; start over with a new key. Other
		// failures (the server unreachable) keep the key for the next attempt.
		if strings.Contains(err.Error(), "is not compatible") {
			return false, r.dropKeyOnRefusal(err)
		}
		return false, err
	}
	if foreign, err := r.checkRequester(ctx, client, reqName); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		if foreign {
			return false, r.dropKeyOnRefusal(err)
		}
		return false, err
	}
	logger.Info("Waiting for the kubelet-serving CSR to be approved", "csr", reqName, "hint", fmt.Sprintf(approvalHint, reqName))
	crtPEM, err := csr.WaitForCertificate(ctx, client, reqName, reqUID)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		// A denied or failed request is final: the next attempt starts over with a new key.
		return false, r.dropKeyOnRefusal(fmt.Errorf("kubelet-serving CSR %s: %w", reqName, err))
	}
	cert, err := r.store.Update(crtPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("storing the kubelet-serving certificate: %w", err)
	}
	r.mu.Lock()
	r.current = cert
	r.mu.Unlock()
	if err := os.Remove(r.keyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Error(err, "Removing the used kubelet-serving request key", "file", r.keyFile)
	}
	return true, nil
}

// checkRequester makes sure a CSR found under the request's name was filed by this node: one
// filed by someone else, even for our key (a copy of our request), is never approved as the
// node's, and the hint must not send an administrator to approve it.
// foreign is true when it was not; an error alone is a failed read, tried again later.
func (r *servingRequester) checkRequester(ctx context.Context, client kubernetes.Interface, name string) (foreign bool, err error) {
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the kubelet-serving CSR %s: %w", name, err)
	}
	if got.Spec.Username != r.template.Subject.CommonName {
		return true, fmt.Errorf("the kubelet-serving CSR %s was filed by %q, not by this node; asking anew with a new key", name, got.Spec.Username)
	}
	return false, nil
}

// requestName names the CSR after everything it asks for, the key included: a restart asks
// for the same name, and a changed request (a new address) gets a new one.
func (r *servingRequester) requestName(key crypto.Signer) (string, error) {
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", fmt.Errorf("encoding the kubelet-serving public key: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", certificatesv1.KubeletServingSignerName, r.template.Subject.CommonName, r.template.DNSNames)
	for _, ip := range r.template.IPAddresses {
		fmt.Fprintf(h, "%s\x00", ip)
	}
	h.Write(pub)
	return "kubelet-serving-" + hex.EncodeToString(h.Sum(nil))[:20], nil
}

// pendingKey loads the key of the request in flight, or makes and keeps a new one. The file is
// written whole (a temporary file renamed over it) and readable by the owner alone.
func (r *servingRequester) pendingKey() (crypto.Signer, []byte, error) {
	if data, err := os.ReadFile(r.keyFile); err == nil {
		if k, perr := keyutil.ParsePrivateKeyPEM(data); perr == nil {
			if s, ok := k.(crypto.Signer); ok {
				return s, data, nil
			}
		}
		klog.FromContext(r.ctx).Info("Replacing an unreadable kubelet-serving request key", "file", r.keyFile)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading the kubelet-serving request key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the kubelet-serving key: %w", err)
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.keyFile), ".serving-key-")
	if err != nil {
		return nil, nil, fmt.Errorf("keeping the kubelet-serving request key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), r.keyFile)
	}
	if werr != nil {
		return nil, nil, fmt.Errorf("keeping the kubelet-serving request key: %w", werr)
	}
	return key, data, nil
}

// dropKeyOnRefusal forgets the pending key, so that a refused or unusable request is never
// asked for again; err is returned as it is.
func (r *servingRequester) dropKeyOnRefusal(err error) error {
	if rmErr := os.Remove(r.keyFile); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		return errors.Join(err, rmErr)
	}
	return err
}
