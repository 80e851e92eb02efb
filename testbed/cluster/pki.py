"""The loopback cluster's certificates and kubeconfig: a CA, the apiserver's serving certificate,
the admin client certificate (``O=system:masters``) and the service-account key, EC P-256 through
the openssl CLI, fresh on every ``up`` (as kwokctl's ``pkg/kwokctl/pki``)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
from pathlib import Path

from testbed.cluster.layout import ClusterError

# --------------------------------------------------------------------------------------------
# certificates and kubeconfig (openssl CLI; EC P-256 keys take milliseconds)

_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[serving]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost, IP:10.96.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""


def _openssl(*args: str) -> None:
    r = subprocess.run(["openssl", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ClusterError(f"openssl {args[0]} failed making the cluster's certificates: {last}")


def make_pki(pki: Path) -> None:
    if shutil.which("openssl") is None:
        raise ClusterError("openssl is not on PATH (needed for the cluster's certificates); install it: apt-get install openssl")
    pki.mkdir(parents=True, exist_ok=True)
    cnf = pki / "openssl.cnf"
    cnf.write_text(_OPENSSL_CNF)

    def key(name: str) -> str:
        path = str(pki / f"{name}.key")
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
        os.chmod(path, 0o600)
        return path

    def serial() -> str:
        return "0x" + (bytes([os.urandom(1)[0] & 0x7F]) + os.urandom(15)).hex()

    ca_key = key("ca")
    _openssl("req", "-x509", "-new", "-key", ca_key, "-subj", "/CN=llm-serving-loopback-ca", "-days", "3650",
             "-sha256", "-config", str(cnf), "-extensions", "ca", "-set_serial", serial(), "-out", str(pki / "ca.crt"))
    for name, subject, ext in (
        ("serving", "/CN=kube-apiserver", "serving"),
        ("admin", "/O=system:masters/CN=llm-serving-admin", "client"),
    ):
        k = key(name)
        csr = str(pki / f"{name}.csr")
        _openssl("req", "-new", "-key", k, "-subj", subject, "-config", str(cnf), "-out", csr)
        _openssl("x509", "-req", "-in", csr, "-CA", str(pki / "ca.crt"), "-CAkey", ca_key, "-set_serial", serial(),
                 "-days", "365", "-sha256", "-extfile", str(cnf), "-extensions", ext, "-out", str(pki / f"{name}.crt"))
    sa = key("sa")
    _openssl("pkey", "-in", sa, "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig_text(pki: Path, server: str) -> str:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "llm-serving-loopback", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "llm-serving-admin", "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "llm-serving-loopback", "context": {"cluster": "llm-serving-loopback", "user": "llm-serving-admin"}}],
        "current-context": "llm-serving-loopback",
    }
    return json.dumps(cfg, indent=2) + "\n"  # JSON is YAML


def tls_context(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return ctx
