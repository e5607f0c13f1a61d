package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/store"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bitempo test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// TestTLSAndTokensThroughTheTool serves https with a token file's tokens and
// runs the tool against it with BITEMPO_CA_FILE and BITEMPO_TOKEN.
func TestTLSAndTokensThroughTheTool(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	tokenFile := filepath.Join(dir, "tokens")
	writeFile(t, dir, "tokens", "# who may do what\nread:reader-0123456789abcdef\n\nwrite:writer-0123456789abcdef\n")
	tokens, err := ReadTokens(tokenFile)
	if err != nil || len(tokens) != 2 || tokens[0].Access != Read || tokens[1].Access != Write {
		t.Fatalf("ReadTokens: %v %v", tokens, err)
	}
	db, err := store.Open(filepath.Join(dir, "s.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, db, Config{Options: Options{Name: "s.db", Tokens: tokens}, Listen: "127.0.0.1:0",
			TLSCert: certFile, TLSKey: keyFile, Ready: func(a net.Addr) { addr <- a }})
	}()
	url := "https://" + (<-addr).String()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	ca := "BITEMPO_CA_FILE=" + certFile
	writer, reader := "BITEMPO_TOKEN=writer-0123456789abcdef", "BITEMPO_TOKEN=reader-0123456789abcdef"
	if r := tool(t, dir, "", []string{ca, writer}, "create", "customers", "--key", "id", "--db", url); r.Code != 0 || !strings.Contains(r.Stdout, "created table customers in s.db") {
		t.Fatalf("create over https: %+v", r)
	}
	if r := tool(t, dir, "", []string{ca, reader}, "create", "more", "--key", "id", "--db", url); r.Code != 1 || !strings.Contains(r.Stderr, "read-only") {
		t.Fatalf("create with the read token: %+v", r)
	}
	if r := tool(t, dir, "", []string{ca, reader}, "tables", "--db", url); r.Code != 0 || !strings.Contains(r.Stdout, "customers") {
		t.Fatalf("tables with the read token: %+v", r)
	}
	if r := tool(t, dir, "", []string{ca}, "tables", "--db", url); r.Code != 1 || !strings.Contains(r.Stderr, "401") {
		t.Fatalf("no token: %+v", r)
	}
	if r := tool(t, dir, "", []string{writer}, "tables", "--db", url); r.Code != 1 || !strings.Contains(r.Stderr, "certificate") {
		t.Fatalf("an untrusted certificate: %+v", r)
	}
}

// TestListenRequiresTokensBeyondLoopback refuses a listener other machines
// can reach without tokens, and bad token files.
func TestListenRequiresTokensBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:7420"} {
		if err := Serve(context.Background(), nil, Config{Listen: addr}); !errors.Is(err, ErrInsecure) {
			t.Errorf("--listen %s without tokens: %v", addr, err)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"kind": "admin:0123456789abcdefgh\n", "short": "read:short\n", "empty": "# none\n", "space": "write:0123456789 abcdefgh\n"} {
		writeFile(t, dir, name, content)
		if _, err := ReadTokens(filepath.Join(dir, name)); err == nil {
			t.Errorf("token file %s: no error", name)
		}
	}
}
