package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// Files that StartTLS writes into the certificate directory.
const (
	// TLSCAFile is the PEM certificate of the test certificate authority.
	TLSCAFile = "ca.pem"
	// tlsCertFile and tlsKeyFile are the server's certificate and key.
	tlsCertFile = "server.pem"
	tlsKeyFile  = "server-key.pem"
	// tlsAttempts is how many TLS ports StartTLS tries when the one it
	// picked was taken in the meantime.
	tlsAttempts = 5
	// tlsCertLifetime is how long the generated certificates are valid.
	tlsCertLifetime = 24 * time.Hour
)

// TLSServer is a redis-server started by this package that accepts TLS
// connections only: its plain-text port is closed once it is ready. Its
// certificate is signed by a certificate authority made for it alone,
// and it names 127.0.0.1 and localhost. Clients need not present a
// certificate. Its methods are safe for concurrent use.
type TLSServer struct {
	proc    *redisproc.Server
	certDir string
	addr    string
	roots   *x509.CertPool
}

// StandaloneTLS starts a TLS-only redis-server for the test tb and stops it
// with tb.Cleanup; extraArgs are appended to its command line. It ignores
// REDIS_ADDR. It skips or fails tb as SkipOrFail does when redis-server is
// missing or was built without TLS support.
func StandaloneTLS(tb testing.TB, extraArgs ...string) *TLSServer {
	tb.Helper()
	s, err := StartTLS(WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() {
		if tb.Failed() {
			if tail := s.proc.Log(); tail != "" {
				tb.Logf("redis-server (TLS) %s:%s", s.addr, tail)
			}
		}
		s.Stop()
	})
	return s
}

// StartTLS is StandaloneTLS without a testing.TB: the caller must call
// Stop. It generates a certificate authority and a server certificate into
// a temporary directory, starts redis-server with --tls-port, waits until
// it answers, then closes its plain-text port (CONFIG SET port 0). The
// error wraps ErrUnavailable when redis-server is not on PATH or cannot
// speak TLS (a build without it rejects the tls-* options).
func StartTLS(opts ...Option) (*TLSServer, error) {
	o := buildOptions(opts)
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "redistest-tls-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	roots, err := writeTestCerts(certDir)
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	for range tlsAttempts {
		var port int
		port, err = redisproc.FreePort(false)
		if err != nil {
			break
		}
		var s *TLSServer
		s, err = startTLSOn(bin, certDir, port, roots, o.args)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, redisproc.ErrAddrInUse) {
			break
		}
	}
	_ = os.RemoveAll(certDir)
	return nil, err
}

// startTLSOn starts the server with its TLS listener on port.
func startTLSOn(bin, certDir string, port int, roots *x509.CertPool, extra []string) (*TLSServer, error) {
	args := []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(certDir, tlsCertFile),
		"--tls-key-file", filepath.Join(certDir, tlsKeyFile),
		"--tls-ca-cert-file", filepath.Join(certDir, TLSCAFile),
		"--tls-auth-clients", "no",
	}
	p, err := redisproc.Start(context.Background(), redisproc.Config{
		Bin: bin, Args: append(args, extra...), DirPattern: "redistest-",
	})
	if err != nil {
		if isNoTLSBuild(err) {
			return nil, fmt.Errorf("%w: this redis-server was built without TLS support: %v", ErrUnavailable, err)
		}
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisproc.ProbeTimeout)
	defer cancel()
	// The harness probed readiness on the plain port; now close it, so that
	// the server speaks TLS only. Redis 6.0 cannot change its port at run
	// time: its plain port, on 127.0.0.1 and known to nobody, stays open.
	_, err = redisproc.CommandString(ctx, p.Addr(), "CONFIG", "SET", "port", "0")
	if err != nil && strings.Contains(err.Error(), "Unsupported CONFIG parameter: port") {
		err = nil
	}
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("redistest: closing the plain-text port of %s: %w", p.Addr(), err)
	}
	return &TLSServer{
		proc:    p,
		certDir: certDir,
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		roots:   roots,
	}, nil
}

// isNoTLSBuild reports whether a startup error says that the server does
// not know the tls-* options.
func isNoTLSBuild(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "bad directive") || strings.Contains(msg, "tls is not supported") ||
		strings.Contains(msg, "without tls")
}

// Addr returns the TLS address, "127.0.0.1:port".
func (s *TLSServer) Addr() string { return s.addr }

// URL returns the server's rediss:// URL, for rueidis.ParseURL or a
// command line. Verifying the server needs the test certificate authority:
// add RootCAs to the parsed TLS configuration, or point SSL_CERT_FILE at
// CAFile for a separate process.
func (s *TLSServer) URL() string { return "rediss://" + s.addr }

// CAFile returns the path of the certificate authority's PEM file. It is
// removed by Stop.
func (s *TLSServer) CAFile() string { return filepath.Join(s.certDir, TLSCAFile) }

// RootCAs returns a pool holding only the test certificate authority.
func (s *TLSServer) RootCAs() *x509.CertPool { return s.roots }

// TLSConfig returns a new client configuration that trusts only the test
// certificate authority and expects the server name 127.0.0.1.
func (s *TLSServer) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// Client returns a rueidis client connected over TLS to this server,
// closed by tb.Cleanup.
func (s *TLSServer) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{s.addr}, ForceSingleClient: true, TLSConfig: s.TLSConfig(),
	})
	if err != nil {
		tb.Fatalf("redistest: connecting over TLS to %s: %v", s.addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Stop stops the server (see Server.Stop) and removes its certificates. It
// is safe to call more than once and on a nil TLSServer.
func (s *TLSServer) Stop() {
	if s == nil {
		return
	}
	s.proc.Stop()
	_ = os.RemoveAll(s.certDir)
}

// writeTestCerts makes a certificate authority and a server certificate
// for 127.0.0.1 and localhost signed by it, writes them to dir and returns
// a pool that trusts the authority.
func writeTestCerts(dir string) (*x509.CertPool, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redistest: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "interlock test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(tlsCertLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("redistest: CA certificate: %w", err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redistest: server key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(tlsCertLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: server key: %w", err)
	}
	for name, block := range map[string]*pem.Block{
		TLSCAFile:   {Type: "CERTIFICATE", Bytes: caDER},
		tlsCertFile: {Type: "CERTIFICATE", Bytes: srvDER},
		tlsKeyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return roots, nil
}
