"""Each process of the loopback cluster as a command line (as kwokctl's
``pkg/kwokctl/components``): its argv, its URL and its health path. Every address is 127.0.0.1."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from testbed.cluster.layout import LOOPBACK, KSERVE_STANDIN, BINARIES, Layout


SERVICE_CIDR = "10.96.0.0/16"  # allocation range inside the apiserver only
POD_CIDR = "10.244.0.0/24"  # kwok writes these into pod status; nothing routes them
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# the command lines


def component_argv(name: str, bin_dir: Path, lay: Layout, ports: dict[str, int]) -> list[str]:
    """The argv of one component; every address in it is 127.0.0.1."""
    pki, kc = lay.pki, str(lay.kubeconfig)
    exe = str(bin_dir / name)
    serving = [f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}"]
    # No --authentication/authorization-kubeconfig: /healthz is served to anyone (always-allow
    # path), everything else on these ports is refused; nothing here needs more.
    kube_common = [
        f"--kubeconfig={kc}",
        f"--bind-address={LOOPBACK}",
        "--leader-elect=false",
        "--profiling=false",
        *serving,
    ]
    if name == "etcd":
        client, peer = f"http://{LOOPBACK}:{ports['etcd']}", f"http://{LOOPBACK}:{ports['etcd-peer']}"
        return [exe, "--name=default", f"--data-dir={lay.etcd}",
                f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}", "--initial-cluster-state=new",
                "--unsafe-no-fsync=true"]  # a throwaway cluster: speed over durability
    if name == "kube-apiserver":
        return [exe, f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}",
                f"--secure-port={ports['kube-apiserver']}",
                f"--etcd-servers=http://{LOOPBACK}:{ports['etcd']}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--client-ca-file={pki / 'ca.crt'}", *serving, f"--cert-dir={pki}",
                f"--service-account-issuer={SA_ISSUER}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--authorization-mode=Node,RBAC", "--allow-privileged=true",
                "--endpoint-reconciler-type=none",  # a loopback advertise address is no valid endpoint
                "--profiling=false"]
    if name == "kube-controller-manager":
        return [exe, *kube_common, f"--secure-port={ports[name]}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}", "--use-service-account-credentials=false",
                # a claim seen before its pre-bound volume waits for the next resync (default 15 s)
                "--pvclaimbinder-sync-period=1s",
                # its default, /usr/libexec/kubernetes/..., would be created outside the state dir
                f"--flex-volume-plugin-dir={lay.root / 'flexvolume'}"]
    if name == "kube-scheduler":
        return [exe, *kube_common, f"--secure-port={ports[name]}"]
    if name == "kwok":
        return [exe, f"--kubeconfig={kc}", f"--config={lay.stages}",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_SELECTOR}",
                f"--node-ip={LOOPBACK}", f"--cidr={POD_CIDR}",
                "--node-lease-duration-seconds=40",
                f"--server-address={LOOPBACK}:{ports['kwok']}"]
    if name == KSERVE_STANDIN:
        kubectl = bin_dir / "kubectl"
        return [sys.executable, "-m", "testbed.kserve_standin", f"--kubeconfig={kc}",
                f"--kubectl={kubectl if kubectl.exists() else 'kubectl'}", f"--health-address={LOOPBACK}:{ports[name]}"]
    raise ValueError(name)


def component_url(name: str, ports: dict[str, int]) -> str:
    scheme = "http" if name in ("etcd", "kwok", KSERVE_STANDIN) else "https"
    return f"{scheme}://{LOOPBACK}:{ports[name]}"


HEALTH_PATH = {"etcd": "/health", "kube-apiserver": "/readyz", "kube-controller-manager": "/healthz",
               "kube-scheduler": "/healthz", "kwok": "/healthz", KSERVE_STANDIN: "/healthz"}


def missing_binaries(bin_dir: Path) -> list[str]:
    return [c for c in BINARIES if not ((bin_dir / c).is_file() and os.access(bin_dir / c, os.X_OK))]
