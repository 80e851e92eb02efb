"""What the Kubernetes API server (and the kubelet, for images) refuses, as plain predicates, so
the stack file is refused at its key instead of the apply failing half-way.

Each ``*_problems`` function returns the list of what is wrong (empty: valid), as apimachinery's
``k8s.io/apimachinery/pkg/util/validation/validation.go`` does (``IsDNS1123Label``,
``IsDNS1123Subdomain``, ``IsDNS1035Label``, ``IsQualifiedName``, ``IsValidLabelValue``,
``IsCIdentifier``); the regular expressions below are that file's, with its length limits. The
kubernetes Python client has no validators, so they are written here once, and the stack-file
schema (:mod:`core.k8s.values`) and the policies call them.

- :func:`dns1123_label_problems`: namespaces (63, ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``);
- :func:`dns1123_subdomain_problems`: node names, PVC names (253, dot-separated labels);
- :func:`dns1035_label_problems`: Service names (63, starting with a letter);
- :func:`label_key_problems`: label keys and selector keys (``[prefix/]name``, name 63,
  prefix a DNS-1123 subdomain);
- :func:`label_value_problems`: label and selector values (63, may be empty);
- :func:`env_name_problems`: environment variable names (C_IDENTIFIER ``[A-Za-z_][A-Za-z0-9_]*``,
  what ``IsCIdentifier`` checks and what a shell can read; the API server's looser
  ``IsEnvVarName`` accepts ``-`` and ``.`` too, which ``sh`` cannot expand);
- :func:`image_problems`: image references in the grammar of the distribution reference
  library the kubelet parses them with (``github.com/distribution/reference``, regexp.go:
  ``[domain/]path[:tag][@digest]``, name at most 255 characters); the kubelet reports anything
  else as ``InvalidImageName`` and never starts the pod;
- :data:`INT32_MAX`: the largest value of an ``int32`` API field (probe thresholds and periods,
  replicas, ports); a larger one is refused by the API server's decoder.

Plain Python.
"""

from __future__ import annotations

import re

#: Largest int32 (``math.MaxInt32``): probe failureThreshold, periodSeconds, replicas.
INT32_MAX = 2**31 - 1
#: The longest string execve(2) takes in argv or the environment, in bytes with its NUL: Linux's
#: MAX_ARG_STRLEN, 32 pages of 4 KiB (include/uapi/linux/binfmts.h); a longer one fails with E2BIG.
MAX_ARG_STRLEN = 32 * 4096

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
#: distribution/reference: NameTotalLengthMax.
IMAGE_NAME_MAX = 255

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_C_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"

# distribution/reference regexp.go
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN = r"(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*|" + _IPV6 + r")(?::[0-9]+)?"
_NAME = r"(?:" + _DOMAIN + r"/)?" + _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(r"(?P<name>" + _NAME + r")(?::" + _TAG + r")?(?:@" + _DIGEST + r")?")


_RE = {name: re.compile(p) for name, p in (("label", _DNS1123_LABEL), ("subdomain", _DNS1123_SUBDOMAIN),
                                      ("dns1035", _DNS1035_LABEL), ("qualified", _QUALIFIED_NAME),
                                      ("value", _LABEL_VALUE), ("cid", _C_IDENTIFIER))}


def _check(value: str, key: str, limit: int, what: str) -> list[str]:
    out = []
    if len(value) > limit:
        out.append(f"must be no more than {limit} characters (it has {len(value)})")
    if not _RE[key].fullmatch(value):
        out.append(what)
    return out


def dns1123_label_problems(value: str) -> list[str]:
    """``IsDNS1123Label``: at most 63 characters, lowercase alphanumerics or '-', starting and
    ending with an alphanumeric."""
    return _check(value, "label", DNS1123_LABEL_MAX, "must consist of lower case alphanumeric characters or '-', "
                  "and must start and end with an alphanumeric character (regex [a-z0-9]([-a-z0-9]*[a-z0-9])?)")


def dns1123_subdomain_problems(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: at most 253 characters, DNS-1123 labels joined by '.'."""
    return _check(value, "subdomain", DNS1123_SUBDOMAIN_MAX, "must consist of lower case alphanumeric characters, "
                  "'-' or '.', and must start and end with an alphanumeric character")


def dns1035_label_problems(value: str) -> list[str]:
    """``IsDNS1035Label``: as a DNS-1123 label, but starting with a letter (Service names)."""
    return _check(value, "dns1035", DNS1035_LABEL_MAX, "must consist of lower case alphanumeric characters or '-', "
                  "start with a letter, and end with an alphanumeric character (regex [a-z]([-a-z0-9]*[a-z0-9])?)")


def label_key_problems(key: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``; the name at most 63 characters of alphanumerics,
    '-', '_' or '.', starting and ending with an alphanumeric; the prefix a DNS-1123 subdomain."""
    prefix, slash, name = key.rpartition("/")
    out = []
    if slash:
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            out += [f"prefix part {p}" for p in dns1123_subdomain_problems(prefix)]
        if prefix.count("/"):
            out.append("a qualified name has at most one '/'")
    if not name:
        return out + ["name part must be non-empty"]
    return out + _check(name, "qualified", QUALIFIED_NAME_MAX, "name part must consist of alphanumeric characters, "
                        "'-', '_' or '.', and must start and end with an alphanumeric character")


def label_value_problems(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 alphanumerics, '-', '_' or '.', starting and
    ending with an alphanumeric."""
    return _check(value, "value", LABEL_VALUE_MAX, "must be empty or consist of alphanumeric characters, '-', '_' "
                  "or '.', and must start and end with an alphanumeric character")


def env_name_problems(name: str) -> list[str]:
    """``IsCIdentifier``: letters, digits and '_', not starting with a digit."""
    if _RE["cid"].fullmatch(name):
        return []
    return ["must consist of letters, digits and '_', and must not start with a digit (a C identifier, "
            "regex [A-Za-z_][A-Za-z0-9_]*)"]


def image_problems(image: str) -> list[str]:
    """The kubelet's image reference grammar (distribution/reference): ``[registry[:port]/]``
    lowercase path components ``[:tag][@algorithm:hex]``; the name at most 255 characters; no
    surrounding whitespace (the API server's own check on ``containers[].image``)."""
    if image != image.strip():
        return ["must not have leading or trailing whitespace"]
    m = _REFERENCE.fullmatch(image)
    if m is None:
        return ["is not an image reference [registry[:port]/]name[:tag][@sha256:digest] (the path lowercase; "
                "a tag of letters, digits, '_', '.' or '-', at most 128; the kubelet reports InvalidImageName)"]
    if len(m.group("name")) > IMAGE_NAME_MAX:
        return [f"its repository name must be no more than {IMAGE_NAME_MAX} characters"]
    return []
