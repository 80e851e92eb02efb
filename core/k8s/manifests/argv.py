"""A container's argv as it will run: the one reader the policies (and the endpoint model) use.

A manifest does not always spell the server's argv out literally. Kubernetes expands
``$(VAR)`` in ``command`` and ``args`` from the container's ``env`` before the process starts;
a shell (``sh -c "vllm serve ..."``) splits and expands its script; an omitted ``command``
runs the image's entrypoint. :func:`effective_argv` undoes each of these and gives the argv
the kernel will ``exec`` for the server, or says why it cannot be known (a variable set from a
Secret or ConfigMap, a command substitution, an image whose entrypoint is not known).

:func:`server_of` then names the program that argv runs (vLLM, candle-vllm, SGLang, TGI) and
splits off the program's own words (``vllm serve``, ``python3 -m sglang.launch_server``),
leaving its arguments.

Plain Python; the inputs are plain values (lists of strings, an env list as the manifest
writes it).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.catalog.images import image_facts
from core.k8s.manifests.env import UNKNOWN, Environment, Unknown, k8s_expand
from core.k8s.manifests.env import environment as _environment

__all__ = ["UNKNOWN", "Argv", "ServerCall", "Unknown", "container_env", "effective_argv", "image_engine", "k8s_expand",
           "server_of", "shown"]

# --- Kubernetes $(VAR) expansion: core.k8s.manifests.env (the kubelet's), re-exported here ------------

def container_env(env: Sequence[Mapping[str, Any]], environment: Environment | None = None) -> dict[str, Any]:
    """The env of a container as name -> value, as the kubelet sets it
    (:func:`core.k8s.manifests.env.environment`: each value expanded against the entries before it);
    ``valueFrom`` entries (and values that need one) are :data:`UNKNOWN`. ``environment``: the
    container's, when already built (else built from ``env``)."""
    built = environment if environment is not None else _environment(env)
    return {n: (UNKNOWN if v.value is None else v.value) for n, v in built.vars.items()}


# --- shells ------------------------------------------------------------------------------------

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "\n", ";;", "(", ")"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_K8S_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
#: Words that start a shell command without being the program: ``exec vllm serve ...``.
_PREFIX_WORDS = frozenset({"exec", "env", "nohup", "command", "time"})


def _script_of(argv: Sequence[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` / ``bash -lc SCRIPT`` / ``sh -ec SCRIPT``, else None."""
    if not argv or posixpath.basename(argv[0]) not in SHELLS:
        return None
    for i, word in enumerate(argv[1:], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return argv[i + 1] if i + 1 < len(argv) else None
        if not word.startswith("-"):
            return None
    return None


def _shell_expand(script: str, env: Mapping[str, Any], maybe_defined: bool) -> str:
    """``$VAR``, ``${VAR}`` and ``${VAR:-default}`` of ``script`` replaced from ``env`` outside
    single quotes; raises :class:`Unknown` for a variable whose value is not known, and for
    command substitution (``$(...)``, backquotes), which only running the script would tell."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        ch = script[i]
        if ch == "'" and quote != '"':
            quote = "" if quote == "'" else "'"
        elif ch == '"' and quote != "'":
            quote = "" if quote == '"' else '"'
        kept = _K8S_REF.match(script, i) if quote != "'" and script.startswith("$(", i) else None
        if kept is not None and env.get(kept.group(1)) is UNKNOWN and opaque_before("".join(out)):
            out.append("$" + kept.group(1))  # a $(VAR) the kubelet fills from a Secret, an opaque flag's value
            i = kept.end()
            continue
        if quote != "'" and (script.startswith("$(", i) or ch == "`"):
            raise Unknown("the shell script computes a word with command substitution ($(...) or backquotes)")
        m = _SHELL_VAR.match(script, i) if quote != "'" and ch == "$" else None
        if m is None:
            out.append(ch)
            i += 1
            continue
        name = m.group(1) or m.group(3)
        value = env.get(name)
        if (value is UNKNOWN or (value is None and maybe_defined and m.group(2) is None)) \
                and opaque_before("".join(out)):
            out.append(m.group(0))  # an opaque flag's value (--api-key "$VLLM_API_KEY"): kept as written
            i = m.end()
            continue
        if value is UNKNOWN or (value is None and maybe_defined and m.group(2) is None):
            raise Unknown(f"the shell script reads ${name}, whose value is not in the manifest")
        if value is None:
            value = m.group(2) or ""
        out.append(str(value))
        i = m.end()
    return "".join(out)


def _commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script, split at ``;``, ``&&``, ``||``, ``|``, ``&`` and
    newlines, each without its leading assignments and ``exec`` / ``env`` words."""
    lexer = shlex.shlex(script.replace("\\\n", " "), posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in _SEPARATORS or set(token) <= set(";&|\n()"):
            commands.append([])
        else:
            commands[-1].append(token)
    out = []
    for words in commands:
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _PREFIX_WORDS):
            words = words[1:]
        if words:
            out.append(words)
    return out


# --- images whose entrypoint is known ------------------------------------------------------------

def image_entrypoint(image: str) -> tuple[str, ...] | None:
    """The entrypoint of a known serving image (the image catalog, :func:`core.catalog.images.image_facts`:
    vllm/vllm-openai ``vllm serve``, text-generation-inference ``text-generation-launcher``, the
    user's candle-vllm images ``candle-vllm``), else None."""
    known = image_facts(image)
    return known.entrypoint if known else None


# --- the effective argv ------------------------------------------------------------------------


class Argv(NamedTuple):
    """The argv a container will run (``argv``), or None and ``unknown``, why it cannot be
    known from the manifest. ``via``: how it was read (``"as written"``, ``"sh -c"``, ``"image
    entrypoint"``), for messages."""

    argv: tuple[str, ...] | None
    unknown: str | None = None
    via: str = "as written"


def effective_argv(
    command: Sequence[str],
    args: Sequence[str],
    env: Sequence[Mapping[str, Any]] = (),
    image: str = "",
    env_from: bool = False,
    environment: Environment | None = None,
) -> Argv:
    """The argv the container's server process will run, as Kubernetes and the shell pass it.

    1. ``$(VAR)`` in ``command`` and ``args`` expanded from ``env`` (:func:`k8s_expand`).
    2. No ``command``: the image's entrypoint (:func:`image_entrypoint`) before ``args``.
    3. ``sh -c SCRIPT`` (any of :data:`SHELLS`, ``-c`` alone or in a flag group like ``-ec``):
       the script's ``$VAR`` / ``${VAR}`` expanded from ``env``, split into simple commands, and
       the one that runs a known server (:func:`server_of`) taken, else the last one.

    ``env_from``: the container has ``envFrom``, so names not in ``env`` may be defined too.
    ``environment``: the container's :class:`core.k8s.manifests.env.Environment` when already built
    (its ``envFrom`` sources count as ``env_from``). Never raises: what cannot be known is
    returned as ``Argv(None, <why>)``.
    """
    values = container_env(env, environment)
    env_from = env_from or bool(environment is not None and environment.open_sources)
    try:
        cmd = _expand_words(command, values, env_from)
        rest = _expand_words(args, values, env_from)
    except Unknown as err:
        return Argv(None, str(err))
    via = "as written"
    if not cmd:
        entry = image_entrypoint(image)
        if entry is None:
            return Argv(None, f"command is omitted and the entrypoint of image {image or '(none)'} is not known")
        cmd, via = list(entry), "image entrypoint"
    argv = cmd + rest
    script = _script_of(argv)
    if script is None:
        return Argv(tuple(argv), None, via)
    try:
        commands = _commands(_shell_expand(script, values, env_from))
    except Unknown as err:
        return Argv(None, str(err), "sh -c")
    except ValueError as err:  # shlex: an unclosed quote
        return Argv(None, f"the shell script cannot be split: {err}", "sh -c")
    if not commands:
        return Argv(None, "the shell script runs no command", "sh -c")
    servers = [c for c in commands if server_of(c) is not None]
    return Argv(tuple((servers or commands)[-1]), None, "sh -c")


#: Flags whose value is opaque text to every rule (a key, a token): a ``$(VAR)`` whose value the
#: manifests do not hold (a Secret's) is kept as written there, and the argv stays known.
OPAQUE_VALUE_FLAGS = frozenset({"--api-key", "--hf-token"})


#: Text that ends in one of :data:`OPAQUE_VALUE_FLAGS` and its separator (``--api-key=``, ``--api-key "``).
_OPAQUE_BEFORE = re.compile(r"(?:^|\s)(?:" + "|".join(re.escape(f) for f in sorted(OPAQUE_VALUE_FLAGS)) + r")(?:=|\s+)[\"']?$")


def opaque_before(text: str) -> bool:
    """True when a variable reference right after ``text`` is the value of an opaque flag."""
    return _OPAQUE_BEFORE.search(text) is not None


def _expand_words(words: Sequence[Any], values: Mapping[str, Any], env_from: bool) -> list[str]:
    """Each word :func:`k8s_expand`-ed; a value of :data:`OPAQUE_VALUE_FLAGS` (``--api-key $(KEY)``,
    ``--api-key=$(KEY)``, in one word or after the flag's word) whose variable is not known is kept
    as written. Raises :class:`Unknown`."""
    out: list[str] = []
    for word in (str(w) for w in words):
        before = (out[-1] + " ") if out else ""

        def keep(prefix: str, before: str = before) -> bool:
            return opaque_before(before + prefix)

        out.append(k8s_expand(word, values, env_from, keep))
    return out


# --- which server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerCall:
    """A model server's argv split: ``engine`` (``vllm``, ``candle-vllm``, ``sglang``, ``tgi``),
    ``program`` (the words that start it: ``("vllm", "serve")``) and ``args`` (the rest)."""

    engine: str
    program: tuple[str, ...]
    args: tuple[str, ...]


#: Python modules that start a server: ``python3 -m <module>``.
PYTHON_MODULES = {
    "vllm.entrypoints.openai.api_server": "vllm",
    "vllm.entrypoints.api_server": "vllm",
    "sglang.launch_server": "sglang",
    "llama_cpp.server": "llama.cpp",
}
#: Server programs by the basename of argv[0] (a fragment of it: ``/app/llama-server``).
PROGRAMS = {"candle-vllm": "candle-vllm", "text-generation-launcher": "tgi", "tritonserver": "triton",
            "llama-server": "llama.cpp", "local-ai": "localai"}
#: Programs that start a server only with a sub-command: ``ollama serve``, Ray Serve's ``serve run``.
SUBCOMMAND_PROGRAMS = {("ollama", "serve"): "ollama", ("serve", "run"): "ray-serve", ("serve", "deploy"): "ray-serve"}
#: Serving images by a fragment of their repository, for a container whose argv names no server
#: (its entrypoint runs it): Triton, llama.cpp, Ollama, LocalAI, TGI, SGLang, Ray.
IMAGE_ENGINES = (("tritonserver", "triton"), ("llama.cpp", "llama.cpp"), ("llama-cpp", "llama.cpp"),
                 ("ollama/ollama", "ollama"), ("localai", "localai"), ("local-ai", "localai"),
                 ("text-generation-inference", "tgi"), ("sglang", "sglang"), ("rayproject/ray", "ray"))


def image_engine(image: str) -> str | None:
    """The server a serving image runs by its repository (:data:`IMAGE_ENGINES`), else None."""
    repo = image.lower().split("@", 1)[0]
    return next((engine for fragment, engine in IMAGE_ENGINES if fragment in repo), None)


def server_of(argv: Iterable[str]) -> ServerCall | None:
    """The server ``argv`` starts, or None: ``vllm serve ...``, ``python[3] -m
    vllm.entrypoints.openai.api_server ...``, ``python3 -m sglang.launch_server ...``,
    ``sglang serve ...``, ``text-generation-launcher ...``, a ``candle-vllm`` binary; the servers
    the pack does not model too (``tritonserver``, ``llama-server``, ``python3 -m
    llama_cpp.server``, ``ollama serve``, ``local-ai``, Ray Serve's ``serve run``)."""
    words = tuple(argv)
    if not words:
        return None
    base = posixpath.basename(words[0])
    if base in ("vllm", "sglang") and len(words) > 1 and words[1] == "serve":
        return ServerCall(base, words[:2], words[2:])
    if base.startswith("python") and len(words) > 2 and words[1] == "-m" and words[2] in PYTHON_MODULES:
        return ServerCall(PYTHON_MODULES[words[2]], words[:3], words[3:])
    if len(words) > 1 and (base, words[1]) in SUBCOMMAND_PROGRAMS:
        return ServerCall(SUBCOMMAND_PROGRAMS[(base, words[1])], words[:2], words[2:])
    for program, engine in PROGRAMS.items():
        if program in base:
            return ServerCall(engine, words[:1], words[1:])
    return None


def shown(argv: Sequence[str]) -> str:
    """An argv as one shell-quoted line, for messages."""
    return " ".join(shlex.quote(a) for a in argv)
