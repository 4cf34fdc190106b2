package lab

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// The lab's client CA, in the lab's directory: the apiserver trusts the
// certificates it signs (--client-ca-file), and so does a real kubelet
// (clientCAFile). It signs the apiserver's certificate to kubelets (its
// node proxy) and a real node's kubelet's own (system:node:NAME), one CA
// for both as kubeadm's.
const (
	clientCACert = "client-ca.crt"
	clientCAKey  = "client-ca.key"
)

// writePKI makes the client CA and the apiserver's kubelet client
// certificate, in system:masters as kubeadm's apiserver-kubelet-client, so
// a kubelet's webhook authorization allows the node proxy.
func (l *Lab) writePKI() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := certTemplate(1, pkix.Name{CommonName: "lab-client-ca"})
	ca.KeyUsage, ca.BasicConstraintsValid, ca.IsCA = x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, true, true
	der, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(l.Dir, clientCACert), "CERTIFICATE", der); err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(l.Dir, clientCAKey), "EC PRIVATE KEY", keyDER); err != nil {
		return err
	}
	cert, certKey, err := l.ClientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "kubelet-client.crt"), cert, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.Dir, "kubelet-client.key"), certKey, 0o600)
}

// ClientCert is a client certificate and its key (PEM) for user name in
// groups, signed by the lab's client CA.
func (l *Lab) ClientCert(name string, groups ...string) (cert, key []byte, err error) {
	caPEM, err := os.ReadFile(filepath.Join(l.Dir, clientCACert))
	if err != nil {
		return nil, nil, err
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(l.Dir, clientCAKey))
	if err != nil {
		return nil, nil, err
	}
	caBlock, caKeyBlock := pemBlock(caPEM), pemBlock(caKeyPEM)
	if caBlock == nil || caKeyBlock == nil {
		return nil, nil, errors.New("the lab's client CA is not PEM")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	caKey, err := x509.ParseECPrivateKey(caKeyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := certTemplate(serial.Int64()+2, pkix.Name{CommonName: name, Organization: groups})
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// certTemplate is a certificate valid from an hour ago for a year (a
// detached demo lab may live long).
func certTemplate(serial int64, subject pkix.Name) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour)}
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func pemBlock(data []byte) *pem.Block {
	b, _ := pem.Decode(data)
	return b
}
