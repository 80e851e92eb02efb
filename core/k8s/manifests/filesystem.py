"""Where a container's files go: which volume a path lands on, whether it can be written and whether
it outlives the pod, the home directory and the Hugging Face cache a model server uses.

Read from the container's env, volumeMounts, the pod's volumes, its user and the image catalog
(:func:`core.catalog.images.image_user`: the image's user and HOME). Kubernetes semantics: a path lands on
the mount with the longest ``mountPath`` that contains it, else on the container's own filesystem
(writable, gone at every restart); configMap, secret, downwardAPI and projected volumes are read-only;
an emptyDir lives as long as the pod. Pure functions.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from core.catalog.images import image_user
from core.k8s.manifests.pods import Container, Workload
from core.k8s.manifests.read import as_map

#: Volume types the kubelet always mounts read-only.
READ_ONLY_TYPES = ("configMap", "secret", "downwardAPI", "projected")
#: Env that makes the Hugging Face client read its cache only (huggingface_hub ``constants``).
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = ("1", "ON", "YES", "TRUE")


@dataclass(frozen=True)
class Place:
    """Where ``path`` lands: ``mount`` (the volumeMount, None: the container's own filesystem) and
    ``volume`` (the pod's volume of that mount, ``{}`` when not found)."""

    path: str
    mount: Mapping | None
    volume: Mapping

    @property
    def where(self) -> str:
        """How a message names it: ``volume cache (emptyDir) at /root/.cache`` or ``the container's own filesystem``."""
        if self.mount is None:
            return "the container's own filesystem"
        kind = next((k for k in self.volume if k != "name"), "unknown volume")
        return f"volume {self.mount.get('name', '')} ({kind}) mounted at {self.mount.get('mountPath', '')}"

    @property
    def writable(self) -> bool:
        """False on a ``readOnly`` mount or a read-only volume type; the own filesystem is writable."""
        if self.mount is None:
            return True
        return self.mount.get("readOnly") is not True and not any(k in self.volume for k in READ_ONLY_TYPES)

    @property
    def persistent(self) -> bool:
        """True on a volume that outlives the pod (a persistentVolumeClaim, hostPath, csi, nfs, ...):
        not the own filesystem, an emptyDir, an ephemeral volume or a read-only type."""
        if self.mount is None:
            return False
        return not any(k in self.volume for k in ("emptyDir", "ephemeral", *READ_ONLY_TYPES))

    @property
    def size_limit(self) -> str | None:
        """An emptyDir's ``sizeLimit`` as written, else None."""
        return as_map(self.volume.get("emptyDir")).get("sizeLimit") if "emptyDir" in self.volume else None


def place(w: Workload, c: Container, path: str) -> Place:
    """The mount of ``c`` that holds ``path`` (longest mountPath containing it)."""
    path = posixpath.normpath(path)
    best: Mapping | None = None
    for m in c.volume_mounts:
        mp = posixpath.normpath(str(m.get("mountPath") or "/"))
        if (path == mp or path.startswith(mp.rstrip("/") + "/")) and (best is None or len(mp) > len(str(best.get("mountPath")))):
            best = m
    volume = (w.volume(str(best.get("name"))) or {}) if best is not None else {}
    return Place(path, best, volume)


def home(w: Workload, c: Container) -> str | None:
    """HOME in the container: its env's, else the image's user's home when it runs as that user, else
    ``/`` (a uid the image's /etc/passwd does not know has no home: the runtime sets HOME=/); None when
    the image is not in the catalog."""
    if c.env.get("HOME"):
        return c.env["HOME"]
    known = image_user(c.image)
    if known is None:
        return None
    uid = w.run_as(c)[1]
    return known.home if uid is None or uid == known.uid else ("/" if uid not in known.passwd_uids else None)


def hub_cache(w: Workload, c: Container, download_dir: str | None = None) -> str | None:
    """The directory a Hugging Face download goes to: ``download_dir`` (vLLM ``--download-dir``), else
    ``HF_HUB_CACHE``, else ``HF_HOME``/hub, else ``XDG_CACHE_HOME``/huggingface/hub, else
    HOME/.cache/huggingface/hub (huggingface_hub ``constants``); None when HOME is not known."""
    if download_dir:
        return download_dir
    env = c.env
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return posixpath.join(env["HF_HOME"], "hub")
    if env.get("XDG_CACHE_HOME"):
        return posixpath.join(env["XDG_CACHE_HOME"], "huggingface", "hub")
    h = home(w, c)
    return posixpath.join(h, ".cache", "huggingface", "hub") if h else None


def offline(c: Container) -> bool:
    """True when the container's env makes the Hugging Face client use its cache only."""
    return any(c.env.get(k, "").strip().upper() in _TRUE for k in OFFLINE_ENV)


def is_hub_id(model: str | None) -> bool:
    """True when a server's model argument is a Hugging Face hub id (``Qwen/Qwen3-8B``), not a path
    (``/mnt/models/x``, ``./x``) or a URI (``s3://``, ``pvc://``)."""
    return model is not None and model != "" and not model.startswith(("/", ".", "~")) and "://" not in model


# --- the container's filesystem, derived once ---------------------------------------------

#: Directories a vLLM server writes while it starts, each with the env that moves it and its default
#: under HOME (vllm/envs.py ``VLLM_CACHE_ROOT``: ``XDG_CACHE_HOME``/vllm, else ~/.cache/vllm, where
#: torch.compile's cache goes; triton ``runtime/cache.py``: ``TRITON_CACHE_DIR``, else
#: ``TRITON_HOME``/.triton/cache, else ~/.triton/cache, written by the first kernel compile, fatal when it
#: cannot be written: llm-d/llm-d PR #1711). The Hugging Face cache is judged apart
#: (:func:`hub_cache`, model-cache-usable).
WRITTEN_AT_START: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("vLLM's cache (torch.compile)", "VLLM_CACHE_ROOT", (".cache", "vllm")),
    ("Triton's kernel cache", "TRITON_CACHE_DIR", (".triton", "cache")),
)
#: Server flags that name a file the server reads at start (vLLM ``--chat-template``: a path, else the
#: template itself; vllm/entrypoints/chat_utils.py ``load_chat_template`` raises on a path it cannot open).
#: The model's path (``--model`` / ``vllm serve``'s positional) is read too: a path that does not exist is
#: taken for a hub id and refused ("Repo id must be in the form ...").
READ_AT_START = ("--chat-template",)


@dataclass(frozen=True)
class PathUse:
    """One path a container's server uses: ``what`` (``Triton's kernel cache``), ``named_by`` (the env
    or flag that set it, or ``the default under HOME``), ``path``, ``writes`` (it must be writable) and
    where it lands (:class:`Place`); ``root_read_only``: the container's root filesystem is read-only;
    ``denied_uid``: the non-root uid the image's directories there do not belong to (HOME=/ for a uid the
    image does not know: llm-d/llm-d PR #1711, "/.triton" fatal)."""

    what: str
    named_by: str
    path: str
    writes: bool
    place: Place
    root_read_only: bool
    #: The uid that cannot write there on the container's own filesystem (a non-root uid outside its
    #: HOME and /tmp, in an image the catalog describes); None: the container's user may.
    denied_uid: int | None = None

    @property
    def writable(self) -> bool:
        """Writable: on a writable mount, or on a root filesystem that is not read-only and where the
        container's user may write."""
        if self.place.mount is not None:
            return self.place.writable
        return not self.root_read_only and self.denied_uid is None

    @property
    def where(self) -> str:
        """Where it lands, worded; the root filesystem says whether it is read-only or not the user's."""
        if self.place.mount is None and self.root_read_only:
            return "the container's own filesystem, read-only (readOnlyRootFilesystem: true)"
        if self.place.mount is None and self.denied_uid is not None:
            return f"the container's own filesystem, in a directory of the image's root that uid {self.denied_uid} cannot write"
        return self.place.where


def _denied_uid(w: Workload, c: Container, path: str) -> int | None:
    """The container's uid when it may not write ``path`` on the container's own filesystem: a non-root
    uid, in an image the catalog describes, outside that uid's HOME (the image's user's, when it runs as
    it) and /tmp (world-writable); None when it may, or when the image is not known."""
    uid = w.run_as(c)[1]
    known = image_user(c.image)
    if uid is None or uid == 0 or known is None:
        return None
    mine = [known.home] if uid == known.uid else []
    if any(path == d or path.startswith(d.rstrip("/") + "/") for d in (*mine, "/tmp")):
        return None
    return uid


def path_use(w: Workload, c: Container, what: str, named_by: str, path: str, writes: bool) -> PathUse:
    """``path`` as container ``c`` of ``w`` sees it (:class:`PathUse`): its mount, the root filesystem's
    ``readOnlyRootFilesystem`` and, for a path it ``writes``, whether its uid may write there."""
    path = posixpath.normpath(path)
    return PathUse(what, named_by, path, writes, place(w, c, path), root_read_only(c),
                   _denied_uid(w, c, path) if writes else None)


def root_read_only(c: Container) -> bool:
    """The container's ``securityContext.readOnlyRootFilesystem`` (there is no pod-level field)."""
    return c.security_context.get("readOnlyRootFilesystem") is True


def _xdg_cache(w: Workload, c: Container) -> str | None:
    """``XDG_CACHE_HOME``, else HOME/.cache (None: HOME unknown)."""
    if c.env.get("XDG_CACHE_HOME"):
        return c.env["XDG_CACHE_HOME"]
    h = home(w, c)
    return posixpath.join(h, ".cache") if h else None


def paths(w: Workload, c: Container) -> tuple[PathUse, ...]:
    """Every path of :data:`WRITTEN_AT_START`, the model's path and :data:`READ_AT_START` that container ``c`` of ``w`` uses,
    resolved against its mounts (:func:`place`), its root filesystem's ``readOnlyRootFilesystem``, and
    its env, user and HOME (:func:`home`, the image catalog); a default whose HOME is unknown is left out.
    Only a vLLM server's (the engines that write these); ``()`` for other containers."""
    server = c.server
    if server is None or server.engine != "vllm":
        return ()
    out: list[PathUse] = []
    for what, env, default in WRITTEN_AT_START:
        if c.env.get(env):
            path, by = c.env[env], f"env {env}"
        elif env == "VLLM_CACHE_ROOT":
            base = _xdg_cache(w, c)
            path, by = (posixpath.join(base, "vllm") if base else ""), "its default (XDG_CACHE_HOME or HOME/.cache)/vllm"
        elif c.env.get("TRITON_HOME"):
            path, by = posixpath.join(c.env["TRITON_HOME"], ".triton", "cache"), "env TRITON_HOME"
        else:
            h = home(w, c)
            path, by = (posixpath.join(h, *default) if h else ""), "its default HOME/.triton/cache"
        if path and path.startswith("/"):
            out.append(path_use(w, c, what, by, path, True))
    model = server.model_arg
    if model and model.startswith("/"):
        out.append(path_use(w, c, "the model", "--model" if server.get("--model") else "vllm serve's model", model, False))
    for flag in READ_AT_START:
        value = server.get(flag)
        if value and value.startswith("/") and "{" not in value:
            out.append(path_use(w, c, "the chat template", flag, value, False))
    return tuple(out)


def in_image(c: Container, path: str) -> bool | None:
    """True when ``path`` is under a directory the image ships (the image catalog's ``files``), False
    when the catalog lists the image's directories and none holds it, None when the catalog does
    not describe the image (its files are not known)."""
    known = image_user(c.image)
    if known is None or not known.files:
        return None
    return any(path == d.rstrip("/") or path.startswith(d.rstrip("/") + "/") for d in known.files)
