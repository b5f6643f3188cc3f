// The control plane's certificates and keys: one CA per cluster, made at Up.

package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files in Dir/controlplane/pki. Every key is ECDSA P-256, which etcd, the API
// server (service account tokens as ES256) and client-go all accept; it is made in
// microseconds, where RSA 2048 takes tens of milliseconds a key.
const (
	pkiCA           = "ca"             // signs every other certificate; the kubelet and etcd trust it
	pkiAPIServer    = "apiserver"      // the API server's serving certificate
	pkiAdmin        = "admin"          // system:masters client: kubeconfigs, the API server to the kubelet
	pkiEtcd         = "etcd"           // etcd's serving and peer certificate
	pkiEtcdClient   = "apiserver-etcd" // the API server's client certificate to etcd
	pkiServiceAcct  = "sa"             // signs service account tokens (sa.key, sa.pub)
	pkiValidity     = 10 * 365 * 24 * time.Hour
	pkiClockSkewPad = time.Hour // NotBefore in the past, so a clock a little behind still accepts them
)

// certSpec is one leaf certificate.
type certSpec struct {
	file   string
	cn     string
	org    []string
	usages []x509.ExtKeyUsage
	dns    []string
	ips    []net.IP
}

// writePKI writes the cluster's CA, its leaf certificates and the service account
// key pair into dir. Every listener is on loopback, so the serving certificates
// name loopback only (and the in-cluster names of the kubernetes Service).
func writePKI(dir string, serviceIP net.IP) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "paddock-local-ca"},
		NotBefore:             now.Add(-pkiClockSkewPad),
		NotAfter:              now.Add(pkiValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCertKey(dir, pkiCA, caDER, caKey); err != nil {
		return err
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	leaves := []certSpec{
		{file: pkiAPIServer, cn: "kube-apiserver", usages: []x509.ExtKeyUsage{server},
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips: append(append([]net.IP{}, loopback...), serviceIP)},
		{file: pkiAdmin, cn: "paddock-admin", org: []string{"system:masters"}, usages: []x509.ExtKeyUsage{client}},
		{file: pkiEtcd, cn: "etcd", usages: []x509.ExtKeyUsage{server, client}, dns: []string{"localhost"}, ips: loopback},
		{file: pkiEtcdClient, cn: "kube-apiserver-etcd-client", usages: []x509.ExtKeyUsage{client}},
	}
	for _, l := range leaves {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber:          serial(),
			Subject:               pkix.Name{CommonName: l.cn, Organization: l.org},
			NotBefore:             now.Add(-pkiClockSkewPad),
			NotAfter:              now.Add(pkiValidity),
			KeyUsage:              x509.KeyUsageDigitalSignature,
			ExtKeyUsage:           l.usages,
			BasicConstraintsValid: true,
			DNSNames:              l.dns,
			IPAddresses:           l.ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("certificate %s: %w", l.file, err)
		}
		if err := writeCertKey(dir, l.file, der, key); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, pkiServiceAcct+".key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, pkiServiceAcct+".pub"), "PUBLIC KEY", pub, 0o644)
}

// pkiFile is a file of dir's PKI: pkiFile(dir, pkiCA, ".crt").
func pkiFile(dir, name, ext string) string { return filepath.Join(dir, name+ext) }

func writeCertKey(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writePEM(pkiFile(dir, name, ".crt"), "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(pkiFile(dir, name, ".key"), key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still be valid.
		return big.NewInt(1)
	}
	return n
}

// firstServiceIP is the kubernetes Service's address: the first of cidr.
func firstServiceIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := n.IP.To4()
	if ip == nil {
		return nil, errors.New("service CIDR " + cidr + " is not IPv4")
	}
	out := make(net.IP, len(ip))
	copy(out, ip)
	out[3]++
	return out, nil
}
