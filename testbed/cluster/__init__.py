"""A loopback test cluster for the llm-serving stack: a real control plane, a fake GPU node.

    python -m testbed.cluster up [--pod-ready-delay SECONDS] [--timeout SECONDS]
                               [--apiserver-port N] [--etcd-port N]
    python -m testbed.cluster down [--purge]
    python -m testbed.cluster status
    python -m testbed.cluster env          # prints: export KUBECONFIG=<state>/kubeconfig

Common options: ``--bin-dir`` (default ``$LLM_SERVING_CACHE/bin``) and ``--state-dir``
(default ``$LLM_SERVING_CACHE/cluster``), with ``LLM_SERVING_CACHE`` defaulting to
``~/.cache/llm-serving``.

What ``up`` starts: ``kwokctl create cluster --runtime binary`` (kwokctl v0.8.0, the module and
version of kwok) on the binaries of the bin dir, built from source by ``python3 dev.py
toolchain``; plain processes, no containers, no root, every one listening on 127.0.0.1 only, on
free ports ``up`` chooses (or the ones given) and writes into kwokctl's configuration:

  etcd                     v3.6.16   (go.etcd.io/etcd/server/v3), plain HTTP on loopback
  kube-apiserver           v1.34.2   (k8s.io/kubernetes), TLS, client-certificate auth, RBAC
  kube-controller-manager  v1.34.2   node lifecycle, PV binder, Deployments/ReplicaSets, SAs...
  kube-scheduler           v1.34.2   the real scheduler: the real "Insufficient nvidia.com/gpu"
  kwok-controller          v0.8.0    (sigs.k8s.io/kwok) plays the kubelet of node worker-1
  kserve-standin                     testbed/kserve_standin.py, a component of kwokctl's too

kwokctl makes the certificates and kubeconfig, starts, records and stops the processes. On top
of its defaults (``kwokctl.config``): the apiserver's Service range 10.96.0.0/16 and advertise
address 127.0.0.1, the claim binder's 1 s resync, kwok managing only annotated nodes with node
IP 127.0.0.1 and pod IPs 10.244.0.0/24, and kwok's Stages read from the apiserver. Once kwokctl
is done, ``up`` server-side applies ``testbed/cluster/cluster_kwok_stages.yaml`` (with the pod-ready
delay), then ``testbed/cluster/cluster_objects.yaml``: node ``worker-1`` (4 ``nvidia.com/gpu``,
63495Mi allocatable memory, 32 cpu, no taints), RuntimeClass ``nvidia``, namespace
``llm-serving``, PV + PVC ``llm-models`` (bound), and a stand-in for KServe's InferenceService
CRD. ``up`` returns when every process is healthy, worker-1 is Ready and untainted, the claim is
Bound, the CRD is Established and the namespace's default ServiceAccount exists: a pod applied
right after ``up`` schedules. That takes 5 to 10 s on two busy cores (kwokctl about 4 s of it);
``logs/up.log`` has the steps and their times.

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

  state.json         what runs: per process name, pid, start time, URL, log; the ports; the
                     options; the bin dir. Written as soon as kwokctl returns, so ``down`` finds
                     even a half-started cluster.
  kubeconfig         admin credentials for https://127.0.0.1:<port> (written by kwokctl; the
                     certificates it names are in kwokctl/clusters/llm-serving/pki/)
  kwokctl.yaml       kwokctl's configuration (``kwokctl.config``); bin/kserve-standin links to
                     this Python, so that kwokctl names the stand-in's log after it
  kwokctl/           kwokctl's KWOK_WORKDIR (so ~/.kwok is neither read nor written); its cluster
                     ``clusters/llm-serving/`` (pki, etcd data, pids, logs, kwok's config) is
                     deleted by ``down`` and made afresh by every ``up``: an empty cluster
  logs/up.log        what ``up`` did, when; logs/kwokctl.log: kwokctl's own output;
                     logs/<name>.log: each process's log, kept there when the cluster stops
  .lock              held by ``up`` and ``down``

``up`` on a healthy cluster does nothing and says so (given another ``--pod-ready-delay``, it
applies kwok's pod-ready Stage with it: kwok takes it at once, nothing restarts). ``up`` on a
half-dead one stops what is left and starts afresh. ``down`` runs ``kwokctl delete cluster``,
then kills whatever recorded process is left (same pid and start time) and is safe to repeat;
``--purge`` also deletes the state directory.

Cut by job: ``layout.py`` the names, errors, state file and lock every part shares;
``kwokctl.py`` kwokctl's configuration, running it, its pid files, ports and HTTP to the
components; ``setup.py`` the objects and Stages applied and their checks; ``cmd.py`` ``up``,
``down``, ``status``, ``env`` (``__main__.py`` runs it).

Exit codes: 0 done (``status``: up and ready); 1 ``status`` only: not running, or not healthy;
2 could not do it: a binary is missing, a port is taken, kwokctl failed, a component exited or
was not ready in time, another ``up``/``down`` holds the lock, a process would not stop. Each of these prints
ONE line on stderr naming what, why and what to run, and leaves nothing it started running;
130 interrupted (everything started was stopped).
"""
