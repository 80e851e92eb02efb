"""Container image references and the facts of known images.

``parse_image`` splits a reference; :attr:`ImageRef.version` reads an engine's release from its
tag (``vllm/vllm-openai:v0.11.0`` -> ``(0, 11, 0)``), for the rules and capacity figures that
hold only for some releases (vLLM V0 / V1 profiling, samplers, defaults). :func:`image_facts`
gives what a known image runs as (user, home, entrypoint), from the image catalog
``core/data/images.yaml`` (schema ``images.schema.json``, :data:`IMAGES_FILE`). Plain Python and
pydantic.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core.catalog import datafile

#: An image reference pinned by digest: ``...@sha256:`` and 64 hex digits.
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_digest_pinned(image: str) -> bool:
    """True when ``image`` ends in ``@sha256:<64 hex>`` (a digest never moves; coder.yaml: the
    vLLM image is pinned, 003: a moving tag is pulled Always)."""
    return bool(DIGEST.search(image))


#: ``v0.11.0``, ``0.6.4``, ``v0.10.1.1``, ``v0.11.0-cu128``, ``0.9.2rc1``: a leading release number.
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?=$|[-+._a-z])")


@dataclass(frozen=True)
class ImageRef:
    """An image reference split into repository, tag and digest.

    ``tag`` is ``None`` when the reference has no tag (the registry serves ``latest``);
    ``digest`` is the ``sha256:...`` part after ``@``, or None.
    """

    repository: str
    tag: str | None
    digest: str | None

    @property
    def pinned(self) -> bool:
        """True when pinned by digest: the tag (if any) is then ignored by the kubelet."""
        return bool(self.digest)

    @property
    def shown_tag(self) -> str:
        """The tag as messages show it: ``:sm70`` or ``:latest (no tag)``."""
        return f":{self.tag}" if self.tag else ":latest (no tag)"

    @property
    def version(self) -> tuple[int, ...] | None:
        """The release the tag names, as a tuple of ints (``v0.11.0`` -> ``(0, 11, 0)``), or None
        when the tag names none (``latest``, ``sm70``, ``nightly``, no tag): then version-bound
        rules must say the version is unknown rather than guess."""
        m = _RELEASE.match(self.tag or "")
        if not m:
            return None
        return tuple(int(g) for g in m.groups() if g is not None)


    @property
    def names_a_build(self) -> bool:
        """True when the tag names one build: it carries a number (a release ``v0.11.0``, a date
        ``20250312_0916_RC01``, a commit ``sha-3f2a1c9``). False for no tag and for word-only tags
        (``latest``, ``nightly``, ``main``, ``stable``), which registries move by convention. On a
        cluster whose inventory says tags are not rebuilt, only those are moving."""
        return bool(self.tag) and any(ch.isdigit() for ch in self.tag or "")


def parse_image(image: str) -> ImageRef:
    """Split ``registry[:port]/path/name[:tag][@sha256:digest]``; a port is not a tag."""
    rest, _, digest = image.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        return ImageRef(rest[:colon], rest[colon + 1:] or None, digest or None)
    return ImageRef(rest, None, digest or None)


# --- the image catalog ---------------------------------------------------------------------------


class ImageFacts(BaseModel):
    """One image family of ``core/data/images.yaml``: what its containers run as unless the pod
    says otherwise. Every field is read from the image's Dockerfile (``source``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str = Field(min_length=1, description="A fragment of the repository that names the image family (vllm-openai): "
                       "images built from it keep its entrypoint.")
    repositories: tuple[str, ...] = Field(
        default=(), description="Repositories, registry host left out (vllm/vllm-openai), whose images run as user, uid "
                                "and home below; an image built from them may set another USER, so only these are judged.")
    entrypoint: tuple[str, ...] = Field(min_length=1, description="ENTRYPOINT: what runs when a container omits command.")
    user: str = Field(min_length=1, description="USER the image runs as (root when the Dockerfile sets none).")
    uid: int = Field(strict=True, ge=0, description="That user's uid (root: 0).")
    home: str = Field(pattern=r"^/", description="HOME of that user (root: /root); caches default under it.")
    passwd_uids: tuple[int, ...] = Field(
        description="The uids /etc/passwd of the image knows; another runAsUser has no name and no home (getpwuid fails).")
    files: tuple[str, ...] = Field(
        default=(), description="Directories the image ships files in (absolute, for the listed repositories): a path "
                                "under none of them is not in the image; empty: not recorded, and no path is judged absent.")
    source: str = Field(min_length=1, description="Where these facts come from (the Dockerfile, a public report).")


#: The image catalog's file, ``core/data/images.yaml`` (:mod:`core.catalog.datafile`).
IMAGES_FILE = datafile.Catalog(
    "images", TypeAdapter(tuple[ImageFacts, ...]), "The image catalog (core/data/images.yaml)",
    "Public serving images by a fragment of their repository: entrypoint, user, home, known uids, source.",
    name_key="match")



@functools.cache
def catalog() -> tuple[ImageFacts, ...]:
    """The catalog, in the file's order (the first entry whose ``match`` the repository contains wins),
    read on first use: a damaged file is :class:`core.catalog.datafile.DataFileError` where it is needed (exit
    2 with the fix), not an import error before any command runs."""
    return tuple(IMAGES_FILE.load())


def __getattr__(name: str) -> Any:
    if name == "IMAGES":  # the catalog as a constant, read on first use
        return catalog()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def image_facts(image: str) -> ImageFacts | None:
    """The catalog entry whose ``match`` the repository of ``image`` contains (any registry, tag or
    digest): its entrypoint holds; or None when the catalog does not know the family."""
    repo = parse_image(image).repository.lower()
    return next((f for f in catalog() if f.match in repo), None)


def repository_path(image: str) -> str:
    """The repository of ``image`` without its registry host: ``quay.io/org/x:1`` -> ``org/x``,
    ``docker.io/vllm/vllm-openai`` and ``vllm/vllm-openai`` -> ``vllm/vllm-openai``."""
    repo = parse_image(image).repository.lower()
    head, _, rest = repo.partition("/")
    return rest if rest and ("." in head or ":" in head or head == "localhost") else repo


def image_user(image: str) -> ImageFacts | None:
    """The catalog entry that states the user ``image`` runs as: one whose ``repositories`` list
    its repository (registry host left out); None for any other image, a derived one included
    (quay.io/org/vllm-openai-ubi9 sets its own USER), so no rule assumes its user or HOME."""
    path = repository_path(image)
    return next((f for f in catalog() if path in f.repositories), None)
