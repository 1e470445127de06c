// Package kubetest starts a real Kubernetes control plane for tests: etcd
// and kube-apiserver (built from the Go module proxy by build.sh) on
// loopback, with a token file, RBAC and a CA of the test's own. There is
// no scheduler, controller manager or kubelet: a test plays them through
// the API (Kubelet creates a Job's pod, drives its status and serves its
// logs), so the code under test talks to the very API server a cluster
// runs, over the same paths (watches, status, pods/log through the API
// server's proxy to a kubelet). Only test code imports it.
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"svc/internal/testing/testbin"
	"svc/internal/testing/testwait"
)

// Version is the Kubernetes release build.sh builds.
const Version = "v1.36.4"

// Tokens of the token file: AdminToken is in system:masters; a Cluster's
// Token is a user with only the Role a test gives it.
const (
	AdminToken = "kubetest-admin-token-5f1c2a9e"
	userToken  = "kubetest-driver-token-8b3d7e41"
	// User is the user name of Token.
	User = "svc-driver"
)

// BinDir is where build.sh puts the binaries: $SVC_KUBE_BIN, else
// ~/.cache/svc-kube/<Version>.
func BinDir() string { return testbin.Dir("SVC_KUBE_BIN", "svc-kube", Version) }

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// URL is the API server (https on 127.0.0.1).
	URL string
	// CA is the PEM of the CA that signed the API server's and the
	// kubelets' certificates.
	CA []byte
	// Namespace is a namespace created for the test, with the default
	// ServiceAccount (there is no controller to create it).
	Namespace string
	// Token authenticates User, who may do what Options.Rules allow in
	// Namespace and nothing else.
	Token string
	// Admin is a client with every right.
	Admin kubernetes.Interface

	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// Options configure Start.
type Options struct {
	// Rules are User's rights in Namespace (a Role bound to User).
	Rules []rbacv1.PolicyRule
	// FeatureGates is passed to the API server's --feature-gates.
	FeatureGates string
}

// Start starts etcd and kube-apiserver for t and stops them when t ends.
// It skips t when the binaries are not built (run build.sh), unless
// CI=true, where that is a failure.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	bin := BinDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		testbin.Require(t, filepath.Join(bin, name),
			fmt.Sprintf("kubetest: %s is not built in %s; run drivers/k8s/kubetest/build.sh (or set SVC_KUBE_BIN)", name, bin))
	}
	c := &Cluster{dir: t.TempDir(), Namespace: "evals", Token: userToken}
	c.newCA(t)

	etcdClient, etcdPeer := strconv.Itoa(testbin.FreePort(t)), strconv.Itoa(testbin.FreePort(t))
	testbin.Start(t, c.dir, "etcd", filepath.Join(bin, "etcd"),
		"--name=kubetest", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:"+etcdClient, "--advertise-client-urls=http://127.0.0.1:"+etcdClient,
		"--listen-peer-urls=http://127.0.0.1:"+etcdPeer, "--initial-advertise-peer-urls=http://127.0.0.1:"+etcdPeer,
		"--initial-cluster=kubetest=http://127.0.0.1:"+etcdPeer,
		"--unsafe-no-fsync", "--log-level=warn")

	certFile, keyFile := c.issue(t, "apiserver", "kube-apiserver")
	caFile := filepath.Join(c.dir, "ca.crt")
	saPub, saKey := writeSAKeys(t, c.dir)
	tokens := filepath.Join(c.dir, "tokens.csv")
	mustWrite(t, tokens, fmt.Sprintf("%s,admin,admin-uid,system:masters\n%s,%s,%s-uid\n", AdminToken, userToken, User, User))
	port := strconv.Itoa(testbin.FreePort(t))
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + etcdClient,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + port,
		"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--client-ca-file=" + caFile, "--kubelet-certificate-authority=" + caFile,
		"--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
		"--kubelet-preferred-address-types=InternalIP",
	}
	if o.FeatureGates != "" {
		args = append(args, "--feature-gates="+o.FeatureGates)
	}
	testbin.Start(t, c.dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), args...)
	c.URL = "https://127.0.0.1:" + port

	admin, err := kubernetes.NewForConfig(c.Config(AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	c.Admin = admin
	c.waitReady(t)
	c.setUp(t, o.Rules)
	return c
}

// Config is a client configuration for token.
func (c *Cluster) Config(token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}}
}

// waitReady polls /readyz until the API server answers ok, failing with
// the server's log when it does not.
func (c *Cluster) waitReady(t testing.TB) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CA)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	ready := func() bool {
		req, _ := http.NewRequest("GET", c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !poll(90*time.Second, ready) {
		t.Fatalf("kubetest: kube-apiserver not ready after 90s; its log:\n%s", testbin.Tail(filepath.Join(c.dir, "kube-apiserver.log")))
	}
}

// poll is testwait's loop for a check that reports failure itself.
func poll(timeout time.Duration, cond func() bool) (ok bool) {
	testwait.Until(giveUp{&ok}, timeout, "", func() bool { ok = cond(); return ok })
	return ok
}

// giveUp is a testwait.TB whose Fatalf only ends the wait, so the
// caller can fail with what it knows (the server's log).
type giveUp struct{ ok *bool }

func (giveUp) Helper()                 {}
func (g giveUp) Fatalf(string, ...any) { *g.ok = false }

// setUp creates the test's namespace, its default ServiceAccount and
// User's Role in it.
func (c *Cluster) setUp(t testing.TB, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	ns := c.Namespace
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pod admission needs the namespace's default ServiceAccount, which a
	// controller manager would create.
	if _, err := c.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		return
	}
	if _, err := c.Admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "svc-driver"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-driver"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: User}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "svc-driver"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newCA makes the test's CA, written to dir/ca.crt.
func (c *Cluster) newCA(t testing.TB) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubetest-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c.caCert, _ = x509.ParseCertificate(der)
	c.caKey = key
	c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	mustWrite(t, filepath.Join(c.dir, "ca.crt"), string(c.CA))
}

// issue makes a serving certificate for 127.0.0.1 signed by the CA,
// written to dir/name.crt and name.key.
func (c *Cluster) issue(t testing.TB, name, cn string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := c.issuePEM(t, cn)
	certFile, keyFile = filepath.Join(c.dir, name+".crt"), filepath.Join(c.dir, name+".key")
	mustWrite(t, certFile, string(certPEM))
	mustWrite(t, keyFile, string(keyPEM))
	return certFile, keyFile
}

func (c *Cluster) issuePEM(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.caCert, &key.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeSAKeys writes the service-account signing key pair.
func writeSAKeys(t testing.TB, dir string) (pub, priv string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pder, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	mustWrite(t, pub, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder})))
	mustWrite(t, priv, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return pub, priv
}
