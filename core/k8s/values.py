"""The value types of the stack file, as pydantic annotations: numbers that are numbers, and
names Kubernetes accepts.

- :data:`Int`: a whole number written as one: ``cards: true`` (pydantic's lax mode reads it as 1),
  ``cards: 2.0`` and ``cards: "2"`` are refused (pydantic ``Strict``);
- :data:`Real`: a number, not a boolean (``kv_fraction: true`` read as 1.0);
- :data:`Int32`: an :data:`Int` an ``int32`` API field can hold (:data:`core.k8s.kube.INT32_MAX`);
- :data:`Secret`: a ``secure:`` value, never plain text, never shown (:data:`REDACTED`);
- :data:`NodeName`, :data:`LabelKey`, :data:`LabelValue`, :data:`EnvName`, :data:`Image`,
  :data:`ServiceName` (DNS-1035), :data:`Subdomain`: strings checked by :mod:`core.k8s.kube`'s
  rules (apimachinery's), the error naming the rule and a fix.

:func:`rule_error` is the error they raise: type ``llm_serving_rule`` with the rule broken and the
fix, which the stack-file loader shows under the key path. Plain pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, Strict
from pydantic_core import PydanticCustomError

from core.k8s import kube


def rule_error(rule: str, fix: str, hide_value: bool = False) -> PydanticCustomError:
    """A validation error carrying the rule broken and the fix (error type ``llm_serving_rule``;
    the stack-file loader shows both under the key path). ``hide_value``: the value is a secret
    the loader must not show."""
    return PydanticCustomError("llm_serving_rule", "{rule}", {"rule": rule, "fix": fix, "hide": hide_value})


#: What a secret shows as in every rendering, diff, message and report (never its value).
REDACTED = "[secret]"


def _secret(value: Any) -> Any:
    """A secret config value: ``{secure: <ciphertext>}`` as the stack file stores it (the offline
    preview cannot decrypt it), or a :class:`pydantic.SecretStr` (the program wraps the values
    of config keys the Pulumi CLI marks secret). Plain text is refused, without showing it."""
    if isinstance(value, SecretStr):
        return value
    if isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str):
        return SecretStr(value["secure"])
    raise rule_error(
        "a secret must be stored encrypted; this value is plain text in the stack file (not shown here)",
        "remove it from the stack file and set it with pulumi config set --secret --path "
        "'llm-serving:workloads.<workload>.secret_env.<NAME>' (the file then holds secure: v1:...)",
        hide_value=True,
    )


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise rule_error(f"{str(value).lower()} is a boolean, not a number", "give a number, e.g. 0.85")
    return value


Int = Annotated[int, Strict()]
Real = Annotated[float, BeforeValidator(_not_bool)]
Int32 = Annotated[int, Strict(), Field(le=kube.INT32_MAX)]


def _named(check: Callable[[str], list[str]], what: str, fix: Callable[[str], str]) -> Any:
    def validate(value: str) -> str:
        problems = check(value)
        if problems:
            raise rule_error(f"{what} {value!r} is refused by Kubernetes: {'; '.join(problems)}", fix(value))
        return value
    return AfterValidator(validate)


def _dns_like(value: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:63] or "name"


NodeName = Annotated[str, _named(
    lambda v: kube.dns1123_subdomain_problems(v) + [f"as the kubernetes.io/hostname label value: {p}"
                                                   for p in kube.label_value_problems(v)],
    "node name", lambda v: "use the node's name as `kubectl get nodes` shows it, e.g. worker-1")]
Subdomain = Annotated[str, _named(kube.dns1123_subdomain_problems, "name",
                                  lambda v: f"rename it, e.g. {_dns_like(v)!r}")]
ServiceName = Annotated[str, _named(
    kube.dns1035_label_problems, "name",
    lambda v: "rename it, e.g. " + repr(("x-" if _dns_like(v)[:1].isdigit() else "") + _dns_like(v)))]
LabelKey = Annotated[str, _named(kube.label_key_problems, "label key",
                                 lambda v: "use [prefix/]name, e.g. app.kubernetes.io/name")]
LabelValue = Annotated[str, _named(kube.label_value_problems, "label value",
                                   lambda v: "use at most 63 letters, digits, '-', '_' or '.', e.g. " + repr(
                                       re.sub(r"[^A-Za-z0-9_.-]+", "-", v).strip("-_.")[:63]))]
EnvName = Annotated[str, _named(kube.env_name_problems, "environment variable name",
                                lambda v: "rename it, e.g. " + repr(re.sub(r"\W", "_", v).lstrip("0123456789") or "NAME"))]
def _env_value(value: str) -> str:
    if "\x00" in value:
        raise rule_error("an environment variable's value cannot hold a NUL character (the kernel's execve ends the "
                         "string there, so the server would see a different value)",
                         "remove the NUL (\\0) from the value")
    return value


#: An environment variable's value: any text but a NUL (execve(2) takes NUL-terminated strings).
EnvValue = Annotated[str, AfterValidator(_env_value)]


def _arg(value: str) -> str:
    if "\x00" in value:
        raise rule_error("an argument cannot hold a NUL character (the kernel's execve ends the string there)",
                         "remove the NUL (\\0) from the argument")
    size = len(value.encode()) + 1
    if size > kube.MAX_ARG_STRLEN:
        raise rule_error(f"the argument is {size:,} bytes, above the {kube.MAX_ARG_STRLEN:,} bytes the kernel's execve "
                         "takes per string (MAX_ARG_STRLEN): the container never starts (E2BIG)",
                         "put it in a file (a ConfigMap mounted as a volume) and pass its path")
    return value


#: One string of a container's command or args: no NUL, within execve's per-string limit.
ArgString = Annotated[str, AfterValidator(_arg)]
#: A secret value (``secure:`` in the stack file, ``pulumi config set --secret``): a SecretStr,
#: shown as ``**********``; the components put it in a Kubernetes Secret only.
Secret = Annotated[SecretStr, BeforeValidator(_secret)]
Image = Annotated[str, _named(kube.image_problems, "image",
                              lambda v: "write registry/path/name:tag or name@sha256:<digest>, e.g. "
                                        "forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70")]


def _inside_project(value: str) -> str:
    parts = value.replace("\\", "/").split("/")
    if not value.strip() or value.startswith("/") or ".." in parts or any(c < " " for c in value):
        raise rule_error(f"{value!r} is not a directory inside the project: the kubernetes provider writes (and "
                         "replaces) YAML files under it, so it must be a relative path that stays in the project "
                         "(not empty, not /, not absolute, no .., no control characters)",
                         "name a directory inside the project, e.g. rendered")
    return value


#: ``llm-serving:render_yaml_to_directory``: a relative directory inside the project.
ProjectDirectory = Annotated[str, AfterValidator(_inside_project)]
