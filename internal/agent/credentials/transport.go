package credentials

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/util/connrotation"
)

// newTransport is an HTTPS transport that trusts caPEM and presents, at each handshake, the
// certificate current returns. Its connections are tracked so that a renewal can close them:
// an HTTP/2 connection would otherwise go on presenting the old certificate until it expires.
func newTransport(caPEM []byte, current func() *tls.Certificate, tracker *connrotation.ConnectionTracker) (*http.Transport, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the server's CA bundle holds no certificate")
	}
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert := current(); cert != nil {
				return cert, nil
			}
			// No certificate: the server then sees an anonymous client and refuses it.
			return &tls.Certificate{}, nil
		},
	}
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	dialer := connrotation.NewDialerWithTracker(dial, tracker)
	return utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}), nil
}
