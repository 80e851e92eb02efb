"""A loopback test cluster for the llm-serving stack: a real control plane, a fake GPU node.

    python -m testbed.cluster up [--pod-ready-delay SECONDS] [--timeout SECONDS]
                               [--apiserver-port N] [--etcd-port N]
    python -m testbed.cluster down [--purge]
    python -m testbed.cluster status
    python -m testbed.cluster env          # prints: export KUBECONFIG=<state>/kubeconfig

Common options: ``--bin-dir`` (default ``$LLM_SERVING_CACHE/bin``) and ``--state-dir``
(default ``$LLM_SERVING_CACHE/cluster``), with ``LLM_SERVING_CACHE`` defaulting to
``~/.cache/llm-serving``.

What ``up`` starts (envtest-style: plain processes, no containers, no root), every one of them
listening on 127.0.0.1 only, on free ports chosen at start (or the ones given), each in its own
process group:

  etcd                     v3.6.16   (go.etcd.io/etcd/server/v3), plain HTTP on loopback
  kube-apiserver           v1.34.2   (k8s.io/kubernetes), TLS, client-certificate auth, RBAC
  kube-controller-manager  v1.34.2   node lifecycle, PV binder, Deployments/ReplicaSets, SAs...
  kube-scheduler           v1.34.2   the real scheduler: the real "Insufficient nvidia.com/gpu"
  kwok                     v0.8.0    (sigs.k8s.io/kwok) plays the kubelet of node worker-1

The binaries come from the bin dir, built from source by ``python3 dev.py toolchain``. Once
the apiserver answers /readyz it server-side applies ``testbed/cluster/cluster_objects.yaml``: node
``worker-1`` (4 ``nvidia.com/gpu``, 63495Mi allocatable memory, 32 cpu, no taints), RuntimeClass
``nvidia``, namespace ``llm-serving``, PV + PVC ``llm-models`` (bound), and a stand-in for
KServe's InferenceService CRD. ``up`` returns when all six processes are healthy, worker-1 is
Ready and untainted, the claim is Bound, the CRD is Established and the namespace's default
ServiceAccount exists: a pod applied right after ``up`` schedules. That takes about 5 s on two
busy cores (3 s of it the apiserver's start); ``logs/up.log`` has the steps and their times.

``--service-cluster-ip-range=10.96.0.0/16`` and kwok's pod IPs (10.244.0.0/24) are only
allocation ranges: no route, proxy or CNI exists, so no traffic goes there or anywhere but
127.0.0.1.

Stand-ins, and what they leave untested:

* kwok instead of a kubelet: no container runs, no image is pulled, no probe executes. kwok
  (``testbed/cluster/cluster_kwok_stages.yaml``) moves a pod bound to worker-1 to Running (containers
  started, not ready), then to Ready after ``--pod-ready-delay`` seconds (default 0; per pod the
  annotation ``pod-ready.stage.kwok.x-k8s.io/delay: "240s"`` wins), and deletes a terminating
  pod at once (no grace period). ``nvidia.com/gpu`` is only a counted extended resource: no
  device plugin, so which card a pod gets, card memory, NVLink, /dev/shm size, libcuda
  injection by the nvidia runtime and the PVC's mount are all untested. RuntimeClass ``nvidia``
  exists so that admission accepts the stack's pods; a pod that forgot ``runtimeClassName``
  runs here like any other (on worker-1 it crashes at start). Cards, cpu and memory requests
  are checked by the real scheduler; limits are not enforced. Services get ClusterIPs and EndpointSlices from kwok's fake pod IPs, but nothing
  carries traffic, and a NetworkPolicy is stored, never enforced.
* The InferenceService CRD is our own schema-less stand-in (``x-kubernetes-preserve-unknown-
  fields`` on spec and status; the kserve Go module is not reachable here): the apiserver
  accepts any InferenceService, including one KServe's schema would refuse. No KServe
  controller runs; ``testbed/kserve_standin.py`` (a sixth process) does the one part of its
  RawDeployment reconciler the tests need: each InferenceService gets its predictor Deployment
  (so its pods are scheduled and counted, and a Service selecting them gets endpoints). KServe's
  own ``<name>-predictor`` Services, autoscaling and status (Ready) are not reproduced.
* Every component uses the one admin identity (``O=system:masters``): component RBAC is not
  exercised. No DNS, no kube-proxy, no metrics-server.

State layout (``--state-dir``):

  state.json         what runs: per process name, pid, process group, start time, argv, log,
                     URL; the ports; the options. Written as each process starts, so ``down``
                     finds even a half-started cluster.
  kubeconfig         admin credentials (embedded) for https://127.0.0.1:<port>
  pki/               CA, serving certificate (127.0.0.1, localhost, kubernetes.default...), admin
                     client certificate, service-account key; EC P-256 via the openssl CLI,
                     fresh on every ``up``
  etcd/              etcd's data, wiped on every ``up``: each ``up`` starts an empty cluster
  kwok/stages.yaml   the kwok Stage config with the pod-ready delay; kwok/home is kwok's HOME,
                     so a ~/.kwok/kwok.yaml of the user's is not read
  logs/<name>.log    each process's stdout and stderr; logs/up.log: what ``up`` did, when
  flexvolume/        an empty directory kube-controller-manager insists on (its default is
                     under /usr/libexec)
  .lock              held by ``up`` and ``down``

``up`` on a healthy cluster does nothing and says so (given another ``--pod-ready-delay``, it
restarts kwok alone with it). ``up`` on a half-dead one stops what is left and starts afresh.
``down`` stops every recorded process group (SIGTERM, then SIGKILL after 8 s) and is safe to
repeat; ``--purge`` also deletes the state directory.

Cut by job, as kwokctl is (``pkg/kwokctl/{pki,components,runtime,cmd}``): ``layout.py`` the
names, errors, state file and lock every part shares; ``pki.py`` the certificates and kubeconfig;
``components.py`` each process's argv, URL and health path; ``runtime.py`` starting, watching and
stopping the processes; ``setup.py`` the objects applied and kwok's Stages; ``cmd.py`` ``up``,
``down``, ``status``, ``env`` (``__main__.py`` runs it).

Exit codes: 0 done (``status``: up and ready); 1 ``status`` only: not running, or not healthy;
2 could not do it: a binary is missing, a port is taken, a component exited or was not ready
in time, another ``up``/``down`` holds the lock, a process would not stop. Each of these prints
ONE line on stderr naming what, why and what to run, and leaves nothing it started running;
130 interrupted (everything started was stopped).
"""
