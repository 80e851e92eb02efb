"""vLLM's contract read from a release's source tree (the sdist ``vllm-X.tar.gz`` unpacked), by
``ast`` alone: nothing of vLLM is imported (it needs torch).

What is read, and from where (paths inside the release):

- the CLI flags of ``vllm serve``: ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``,
  ``vllm/entrypoints/openai/cli_args.py`` (``FrontendArgs`` and ``make_arg_parser``),
  ``vllm/entrypoints/cli/serve.py``; a flag given as ``**model_kwargs["max_model_len"]`` takes
  its type, choices and default from the config dataclass field (``vllm/config/``), as
  ``arg_utils._compute_kwargs`` derives them at run time;
- the environment variables: the keys of ``environment_variables`` in ``vllm/envs.py``;
- the dtype rules: ``check_if_supports_dtype`` of ``vllm/platforms/cuda.py`` (before 0.11,
  ``_check_if_gpu_supports_dtype`` of ``vllm/v1/worker/gpu_worker.py``);
- how ``--dtype`` resolves: ``_STR_DTYPE_TO_TORCH_DTYPE``, ``_resolve_auto_dtype`` and
  ``_check_valid_dtype`` (``_FLOAT16_NOT_SUPPORTED_MODELS``) of ``ModelConfig``'s file, and
  ``CudaPlatformBase.supported_dtypes``;
- the quantization methods: ``QuantizationMethods`` and ``get_quantization_config`` of
  ``vllm/model_executor/layers/quantization/__init__.py``, each config class's
  ``get_min_capability``, ``get_supported_act_dtypes`` and ``override_quantization_method``; how
  ``ModelConfig._verify_quantization`` matches ``--quantization`` with the checkpoint's
  ``quant_method`` (its renames, the overrides' order) and where the act dtypes are checked;
- the parser names: ``register_module("name")`` decorators and ``_*_PARSERS_TO_REGISTER`` tables
  of ``vllm/reasoning/`` and the tool parsers' package;
- the image build: ``docker/Dockerfile`` (``CUDA_VERSION``, ``torch_cuda_arch_list``),
  ``CMakeLists.txt`` (``CUDA_SUPPORTED_ARCHS`` by CUDA version), ``requirements/cuda.txt`` (torch);
- the sampler: ``vllm/v1/sample/ops/topk_topp_sampler.py``.

A fact that cannot be read literally is left out or marked so (``choices: null``,
``default_expr``), never guessed.
"""

from __future__ import annotations

import ast
import contextlib
import re
from pathlib import Path
from typing import Any

ARG_UTILS = "vllm/engine/arg_utils.py"
CLI_ARGS = "vllm/entrypoints/openai/cli_args.py"
SERVE = "vllm/entrypoints/cli/serve.py"
ENVS = "vllm/envs.py"
CUDA_PLATFORM = "vllm/platforms/cuda.py"
QUANT_INIT = "vllm/model_executor/layers/quantization/__init__.py"
SAMPLER = "vllm/v1/sample/ops/topk_topp_sampler.py"
GPU_WORKER = "vllm/v1/worker/gpu_worker.py"
MODEL_CONFIG = "vllm/config/model.py"
CONFIG_INIT = "vllm/config/__init__.py"
ARCH_CONVERTOR = "vllm/transformers_utils/model_arch_config_convertor.py"
DOCKERFILE = "docker/Dockerfile"
CMAKE = "CMakeLists.txt"
CUDA_REQUIREMENTS = "requirements/cuda.txt"
#: The packages whose ``register_module`` names are the release's parsers, by kind.
PARSER_PACKAGES = {
    "reasoning": ("vllm/reasoning",),
    "tool_call": ("vllm/tool_parsers", "vllm/entrypoints/openai/tool_parsers"),
}
#: Type names ``_compute_kwargs`` maps to themselves.
_BUILTINS = {"bool", "int", "float", "str", "dict", "list", "tuple", "set", "bytes"}
#: Fields ``_compute_kwargs`` reads as ``human_readable_int`` (vllm/engine/arg_utils.py).
_HUMAN_INTS = {"max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"}


class SourceError(Exception):
    """The release's source lacks a file or a structure this reader needs; the message names it."""


def _parse(root: Path, rel: str) -> ast.Module:
    path = root / rel
    if not path.is_file():
        raise SourceError(f"{rel} is not in the release's source")
    return ast.parse(path.read_text(encoding="utf-8"), filename=rel)


def _literal(node: ast.AST | None) -> tuple[bool, Any]:
    """(True, value) when ``node`` is a literal ``ast.literal_eval`` reads, else (False, None)."""
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _jsonable(value: Any) -> Any:
    """A literal as JSON holds it (tuples and sets as lists); other values as their repr."""
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


# --- the config dataclasses and type aliases --------------------------------------------------


class Index:
    """The module-level type aliases and classes of the files read (first definition wins), with
    each class's fields in order (name -> (annotation, value, docstring)) and the file it is in."""

    def __init__(self, root: Path, files: list[str]) -> None:
        self.aliases: dict[str, ast.AST] = {}
        self.classes: dict[str, tuple[ast.ClassDef, str]] = {}
        for rel in files:
            tree = _parse(root, rel)
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.aliases.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    if isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias":
                        self.aliases.setdefault(node.target.id, node.value)
                elif isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, (node, rel))
                elif type(node).__name__ == "TypeAlias":  # Python 3.12 ``type X = ...``
                    self.aliases.setdefault(node.name.id, node.value)  # type: ignore[attr-defined]

    def fields(self, name: str) -> list[tuple[str, ast.AST, ast.AST | None, str]]:
        """The dataclass fields of class ``name`` (its bases' first, as ``dataclasses.fields``):
        (name, annotation, value, docstring)."""
        if name not in self.classes:
            raise SourceError(f"class {name} is not in the files read")
        cls, _ = self.classes[name]
        out: dict[str, tuple[str, ast.AST, ast.AST | None, str]] = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                for f in self.fields(base.id):
                    out[f[0]] = f
        body = cls.body
        for i, node in enumerate(body):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            if isinstance(node.annotation, ast.Subscript) and _name(node.annotation.value) == "ClassVar":
                continue
            doc = ""
            if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr):
                ok, text = _literal(body[i + 1].value)  # type: ignore[attr-defined]
                doc = text if ok and isinstance(text, str) else ""
            out[node.target.id] = (node.target.id, node.annotation, node.value, doc)
        return list(out.values())

    def is_dataclass(self, name: str) -> bool:
        """Whether class ``name`` is decorated as a config dataclass (``@config``, ``@dataclass``)."""
        if name not in self.classes:
            return False
        cls, _ = self.classes[name]
        return any(_name(d.func if isinstance(d, ast.Call) else d) in ("config", "dataclass") for d in cls.decorator_list)


def _name(node: ast.AST) -> str:
    """``typing.Literal`` / ``Literal`` -> ``Literal``; other nodes ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def type_hints(index: Index, node: ast.AST, depth: int = 0) -> list[Any]:
    """The flattened type hints of an annotation, as vLLM's ``get_type_hints`` gives them: each
    ``Optional`` / ``Union`` / ``|`` / ``Annotated`` / alias opened. Items: a builtin name
    (``"int"``), ``"None"``, ``("Literal", values)``, ``("list", inner)``, ``("tuple", inners)``,
    ``("dataclass", name)``, ``("other", name)``."""
    if depth > 20:
        return [("other", "?")]
    if isinstance(node, ast.Constant):
        if node.value is None:
            return ["None"]
        if isinstance(node.value, str):
            try:
                return type_hints(index, ast.parse(node.value, mode="eval").body, depth + 1)
            except SyntaxError:
                return [("other", node.value)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return type_hints(index, node.left, depth + 1) + type_hints(index, node.right, depth + 1)
    if isinstance(node, ast.Subscript):
        head = _name(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return type_hints(index, args[0], depth + 1) + ["None"]
        if head == "Union":
            return [h for a in args for h in type_hints(index, a, depth + 1)]
        if head == "Annotated":
            return type_hints(index, args[0], depth + 1)
        if head == "Literal":
            values = []
            for a in args:
                ok, v = _literal(a)
                if ok:
                    values.append(v)
                else:
                    values += [x for h in type_hints(index, a, depth + 1) if isinstance(h, tuple) and h[0] == "Literal"
                               for x in h[1]]
            return [("Literal", tuple(values))]
        if head in ("list", "List", "Sequence"):
            return [("list", type_hints(index, args[0], depth + 1))]
        if head in ("tuple", "Tuple"):
            return [("tuple", [type_hints(index, a, depth + 1) if not (isinstance(a, ast.Constant) and a.value is Ellipsis)
                               else ["..."] for a in args])]
        if head in ("dict", "Dict", "Mapping"):
            return ["dict"]
        if head in ("set", "Set"):
            return ["set"]
        if head in ("type", "Type", "Callable"):
            return [("other", head)]
        if head in index.classes or head in index.aliases:
            return type_hints(index, node.value, depth + 1)
        return type_hints(index, args[0], depth + 1)  # a wrapper: SkipValidation[int], Required[...]
    name = _name(node)
    if name == "None":
        return ["None"]
    if name in _BUILTINS:
        return [name]
    if name in ("List", "Sequence"):
        return [("list", [("other", "Any")])]
    if name in ("Dict", "Mapping"):
        return ["dict"]
    if name in index.aliases:
        return type_hints(index, index.aliases[name], depth + 1)
    if index.is_dataclass(name):
        return [("dataclass", name)]
    return [("other", name or ast.unparse(node))]


def _has(hints: list[Any], kind: str) -> bool:
    return any(h == kind or (isinstance(h, tuple) and h[0] == kind) for h in hints)


def _get(hints: list[Any], kind: str) -> Any:
    return next(h for h in hints if isinstance(h, tuple) and h[0] == kind)


def _scalar(hints: list[Any]) -> str:
    """The argparse type of a list's or tuple's element hints."""
    for kind in ("int", "float", "str"):
        if kind in hints:
            return kind
    if _has(hints, "Literal"):
        return _literal_type(_get(hints, "Literal")[1])
    return "str"


def _literal_type(values: tuple[Any, ...]) -> str:
    """``literal_to_kwargs``: the type of the literals (all the same type, vLLM asserts)."""
    kinds = {type(v).__name__ for v in values}
    return kinds.pop() if len(kinds) == 1 else "str"


def field_kwargs(index: Index, name: str, annotation: ast.AST, value: ast.AST | None, doc: str) -> dict[str, Any]:
    """What ``arg_utils._compute_kwargs`` gives a config field: type, choices, nargs, action,
    default (``default_expr`` when the default is not a literal), help."""
    hints = type_hints(index, annotation)
    out: dict[str, Any] = {"help": doc.strip()}
    default_node = value
    if isinstance(value, ast.Call) and _name(value.func) in ("field", "Field"):
        kw = {k.arg: k.value for k in value.keywords}
        default_node = kw.get("default", value.args[0] if value.args else None)
        factory = kw.get("default_factory")
        if factory is not None:
            fname = _name(factory)
            default_node = {"list": ast.List(elts=[]), "dict": ast.Dict(keys=[], values=[]),
                            "set": ast.List(elts=[])}.get(fname, factory)
    ok, default = _literal(default_node)
    if ok:
        out["default"] = _jsonable(default)
    elif default_node is not None:
        out["default_expr"] = ast.unparse(default_node)
    dataclass = next((h for h in hints if isinstance(h, tuple) and h[0] == "dataclass"), None)
    if dataclass is not None:
        out["type"] = "json"
    elif "bool" in hints:
        out["action"] = "boolean-optional"
        out["type"] = "bool"
    elif _has(hints, "Literal"):
        values = tuple(v for h in hints if isinstance(h, tuple) and h[0] == "Literal" for v in h[1])
        out["type"] = _literal_type(values)
        out["choices"] = [_jsonable(v) for v in values]
    elif _has(hints, "tuple"):
        inner = _get(hints, "tuple")[1]
        out["type"] = _scalar(inner[0] if inner else [])
        out["nargs"] = "+" if ["..."] in inner else len(inner)
    elif _has(hints, "list"):
        out["type"] = _scalar(_get(hints, "list")[1])
        out["nargs"] = "+"
    elif "int" in hints:
        out["type"] = "human-int" if name in _HUMAN_INTS else "int"
    elif "float" in hints:
        out["type"] = "float"
    elif "dict" in hints:
        out["type"] = "json-or-str" if ("str" in hints or _has(hints, "other")) else "json"
    else:
        out["type"] = "str"
    if "None" in hints and "bool" not in hints:
        out["accepts_none"] = True
        if out.get("choices") is not None:
            out["choices"] = [*out["choices"], "None"]
    return out


# --- add_argument calls -----------------------------------------------------------------------

#: argparse ``type=`` callables vLLM passes, by their name: the type the data records.
_TYPE_NAMES = {"int": "int", "float": "float", "str": "str", "human_readable_int": "human-int",
               "loads": "json", "parse_type": "json", "optional_type": None, "union_dict_and_str": "json-or-str"}


def _type_of(node: ast.AST) -> str | None:
    """The data's type name of an explicit ``type=`` (``optional_type(int)`` -> ``int``)."""
    if isinstance(node, ast.Call):
        fname = _name(node.func)
        if fname == "optional_type" and node.args:
            return _type_of(node.args[0])
        if fname == "parse_type":
            return "json"
        return None
    name = _name(node)
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    return None


def _action_of(node: ast.AST) -> str | None:
    ok, value = _literal(node)
    if ok and isinstance(value, str):
        return value
    if _name(node) == "BooleanOptionalAction":
        return "boolean-optional"
    return ast.unparse(node)


def _strings(call: ast.Call, loop_key: str | None) -> list[str]:
    """The option strings of an ``add_argument`` call: its string arguments, and the f-string
    ``f"--{key.replace('_', '-')}"`` of a loop over fields as ``--<field with dashes>``."""
    out = []
    for arg in call.args:
        ok, value = _literal(arg)
        if ok and isinstance(value, str):
            out.append(value)
        elif isinstance(arg, ast.JoinedStr) and loop_key is not None:
            out.append("--" + loop_key.replace("_", "-"))
    return out


class _Kwargs:
    """The ``x_kwargs = get_kwargs(Class)`` tables of one function, with the literal overrides the
    function makes (``x_kwargs["f"]["type"] = json.loads``, ``del x_kwargs["f"]["nargs"]``)."""

    def __init__(self, index: Index, func: ast.FunctionDef, classes: dict[str, str]) -> None:
        self.index = index
        self.tables: dict[str, dict[str, dict[str, Any]]] = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                call = node.value
                if isinstance(call, ast.Call) and _name(call.func) in ("get_kwargs", "_customize_cli_kwargs") and call.args:
                    cls = _name(call.args[0])
                    cls = classes.get(cls, cls)
                    if cls in index.classes:
                        self.tables[node.targets[0].id] = {
                            f[0]: field_kwargs(index, *f) for f in index.fields(cls)}
        for node in ast.walk(func):
            self._override(node)

    def _target(self, node: ast.AST) -> tuple[dict[str, Any], str] | None:
        """``x_kwargs["field"]["key"]`` -> (the field's kwargs, key)."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript)):
            return None
        inner = node.value
        table = self.tables.get(_name(inner.value))
        ok_f, fname = _literal(inner.slice)
        ok_k, key = _literal(node.slice)
        if table is None or not ok_f or not ok_k or fname not in table:
            return None
        return table[fname], key

    def _override(self, node: ast.AST) -> None:
        if isinstance(node, ast.Delete):
            for t in node.targets:
                hit = self._target(t)
                if hit:
                    hit[0].pop(hit[1], None)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            hit = self._target(target)
            if not hit:
                return
            kwargs, key = hit
            ok, value = _literal(node.value)
            if key == "type":
                kwargs["type"] = _type_of(node.value) or "str"
            elif key == "choices":
                if isinstance(node, ast.AugAssign) or not ok:
                    kwargs["choices"] = None  # built at run time: not read
                else:
                    kwargs["choices"] = _jsonable(value)
            elif key == "default":
                kwargs.pop("default", None)
                kwargs.pop("default_expr", None)
                kwargs.update({"default": _jsonable(value)} if ok else {"default_expr": ast.unparse(node.value)})
            elif key in ("nargs", "action", "flags", "deprecated"):
                kwargs[key] = _jsonable(value) if ok else ast.unparse(node.value)

    def splat(self, node: ast.AST, loop: tuple[str, str] | None) -> dict[str, Any] | None:
        """The kwargs a ``**x_kwargs["field"]`` (or ``**value`` in a loop over a table) stands for."""
        if isinstance(node, ast.Subscript):
            table = self.tables.get(_name(node.value))
            ok, fname = _literal(node.slice)
            if table is not None and ok and fname in table:
                return dict(table[fname])
        if isinstance(node, ast.Name) and loop is not None and node.id == loop[1]:
            return None  # the caller expands the loop
        return None


def _help_text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    ok, value = _literal(node)
    if ok and isinstance(value, str):
        return value
    if isinstance(node, ast.BinOp):
        return _help_text(node.left) + _help_text(node.right)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    return ""


_REPLACEMENT = re.compile(r"(?:use|in favou?r of|replaced by|instead of this,? use)\s+[`'\"]*(--[a-z0-9][a-z0-9-]*)", re.I)


def _flag_record(strings: list[str], kwargs: dict[str, Any], rel: str) -> dict[str, Any] | None:
    """One flag as the data holds it, from its option strings and argparse kwargs."""
    long = [s for s in strings if s.startswith("--")]
    if not strings or not strings[0].startswith("-"):
        return None
    name = long[0] if long else strings[0]
    action = kwargs.get("action")
    if action in ("store_true", "store_false", "boolean-optional", "store_const", "count"):
        kind = {"boolean-optional": "boolean", "count": "count"}.get(action, "switch")
        ftype = "bool"
    elif action in (None, "store", "append"):
        kind, ftype = "value", kwargs.get("type") or "str"
    else:
        kind, ftype = "value", kwargs.get("type") or "str"
    help_text = str(kwargs.get("help") or "")
    deprecated = bool(kwargs.get("deprecated")) or bool(re.search(r"\bdeprecated\b", help_text, re.I))
    replacement = None
    if deprecated:
        m = _REPLACEMENT.search(help_text)
        replacement = m.group(1) if m and m.group(1) != name else None
    record: dict[str, Any] = {
        "name": name,
        "aliases": [s for s in strings if s != name] + (["--no-" + name[2:]] if kind == "boolean" else []),
        "kind": kind,
        "type": ftype,
        "choices": kwargs.get("choices"),
        "nargs": kwargs.get("nargs") if kwargs.get("nargs") not in (None, "?") else None,
        "accepts_none": bool(kwargs.get("accepts_none")),
        "default": kwargs.get("default"),
        "default_expr": kwargs.get("default_expr"),
        "deprecated": deprecated,
        "replacement": replacement,
        "file": rel,
    }
    extra = kwargs.get("flags")
    if isinstance(extra, list):
        record["aliases"] = [*extra, *record["aliases"]]
    return record


def _calls(index: Index, func: ast.FunctionDef, rel: str, classes: dict[str, str]) -> list[dict[str, Any]]:
    """Every ``.add_argument(...)`` of ``func`` as a flag record, in source order."""
    tables = _Kwargs(index, func, classes)
    out: list[dict[str, Any]] = []

    def visit(body: list[ast.stmt], loop: tuple[str, str, str] | None) -> None:
        for stmt in body:
            if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Tuple) and len(stmt.target.elts) == 2:
                it = stmt.iter
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items":
                    table = _name(it.func.value)
                    key, value = (_name(e) for e in stmt.target.elts)
                    if table in tables.tables:
                        for fname in tables.tables[table]:
                            _visit_loop(stmt.body, table, fname, key, value)
                        continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                    add(node, None)

    def _visit_loop(body: list[ast.stmt], table: str, fname: str, key: str, value: str) -> None:
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                    kwargs = dict(tables.tables[table][fname])
                    strings = _strings(node, fname)
                    add_record(strings, {**kwargs, **_explicit(node)})

    def _explicit(node: ast.Call) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        keywords: list[tuple[str | None, ast.expr]] = []
        for kw in node.keywords:
            if kw.arg is None and isinstance(kw.value, ast.Dict):  # **{**x_kwargs["f"], "default": None}
                for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                    ok_k, key = _literal(k) if k is not None else (True, None)
                    if ok_k:
                        keywords.append((key, v))
            else:
                keywords.append((kw.arg, kw.value))
        for arg, value_node in keywords:
            kw = ast.keyword(arg=arg, value=value_node)
            if kw.arg is None:
                splat = tables.splat(kw.value, None)
                if splat:
                    kwargs.update(splat)
                continue
            ok, value = _literal(kw.value)
            if kw.arg == "type":
                kwargs["type"] = _type_of(kw.value) or "str"
                kwargs["accepts_none"] = isinstance(kw.value, ast.Call) and _name(kw.value.func) == "optional_type"
            elif kw.arg == "action":
                kwargs["action"] = _action_of(kw.value)
            elif kw.arg == "choices":
                kwargs["choices"] = _jsonable(value) if ok else None
            elif kw.arg == "default":
                hit = tables._target(kw.value)
                if hit and hit[1] == "default":
                    kwargs.pop("default_expr", None)
                    if "default" in hit[0]:
                        kwargs["default"] = hit[0]["default"]
                    elif "default_expr" in hit[0]:
                        kwargs["default_expr"] = hit[0]["default_expr"]
                elif ok:
                    kwargs.pop("default_expr", None)
                    kwargs["default"] = _jsonable(value)
                else:
                    kwargs.pop("default", None)
                    kwargs["default_expr"] = ast.unparse(kw.value)
            elif kw.arg == "help":
                hit = tables._target(kw.value)
                kwargs["help"] = hit[0].get("help", "") if hit else _help_text(kw.value)
            elif kw.arg in ("nargs", "deprecated"):
                kwargs[kw.arg] = _jsonable(value) if ok else ast.unparse(kw.value)
        return kwargs

    def add(node: ast.Call, _loop: Any) -> None:
        add_record(_strings(node, None), _explicit(node))

    def add_record(strings: list[str], kwargs: dict[str, Any]) -> None:
        record = _flag_record(strings, kwargs, rel)
        if record is not None:
            out.append(record)

    visit(func.body, None)
    return out


def _function(tree: ast.Module, name: str, cls: str | None = None) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if cls is not None and isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
        elif cls is None and isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise SourceError(f"function {cls + '.' if cls else ''}{name} not found")


def _config_files(root: Path) -> list[str]:
    config = root / "vllm" / "config"
    files = sorted(str(p.relative_to(root)) for p in config.glob("*.py")) if config.is_dir() else []
    if (root / "vllm" / "config.py").is_file():
        files.append("vllm/config.py")
    return files


def read_flags(root: Path) -> list[dict[str, Any]]:
    """Every flag of ``vllm serve`` in the release, in the order its parser adds them, each once
    (the first definition of a name wins, as argparse would refuse a second)."""
    files = [*_config_files(root), ARG_UTILS, CLI_ARGS, QUANT_INIT]
    extra = [rel for rel in ("vllm/attention/backends/registry.py", "vllm/v1/attention/backends/registry.py",
                             "vllm/model_executor/layers/quantization/base_config.py") if (root / rel).is_file()]
    index = Index(root, files + extra)
    flags: list[dict[str, Any]] = []
    cli_tree = _parse(root, CLI_ARGS)
    serve_tree = _parse(root, SERVE)
    frontend_cls = "FrontendArgs"
    flags += _calls(index, _function(cli_tree, "make_arg_parser"), CLI_ARGS, {})
    for cls in ("BaseFrontendArgs", "FrontendArgs"):
        if cls in index.classes:
            try:
                func = _function(cli_tree, "add_cli_args", cls)
            except SourceError:
                continue
            flags += _calls(index, func, CLI_ARGS, {"cls": frontend_cls})
            break
    flags += _calls(index, _function(_parse(root, ARG_UTILS), "add_cli_args", "EngineArgs"), ARG_UTILS, {})
    with contextlib.suppress(SourceError):  # not in every release
        flags += _calls(index, _function(_parse(root, ARG_UTILS), "add_cli_args", "AsyncEngineArgs"), ARG_UTILS, {})
    with contextlib.suppress(SourceError):
        flags += _calls(index, _function(serve_tree, "subparser_init"), SERVE, {})
    seen: set[str] = set()
    unique = []
    for f in flags:
        if f["name"] in seen or f["name"] in ("-h", "--help"):
            continue
        seen.add(f["name"])
        unique.append(f)
    return unique


# --- env, dtype, quantization, parsers, image, sampler -----------------------------------------


def read_env(root: Path) -> list[dict[str, Any]]:
    """The keys of ``environment_variables`` in ``vllm/envs.py`` and each default, where the
    lambda reads ``os.getenv(NAME, <literal>)`` / ``os.environ.get(NAME, <literal>)``."""
    tree = _parse(root, ENVS)
    table = None
    for node in tree.body:
        target: ast.expr
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(value, ast.Dict):
            table = value
    if table is None:
        raise SourceError(f"{ENVS} has no environment_variables table")
    out = []
    for key, value in zip(table.keys, table.values, strict=True):
        ok, name = _literal(key)
        if not ok or not isinstance(name, str):
            continue
        default = None
        for call in ast.walk(value):
            if isinstance(call, ast.Call) and _name(call.func) in ("getenv", "get") and len(call.args) >= 2:
                ok_n, n = _literal(call.args[0])
                ok_d, d = _literal(call.args[1])
                if ok_n and n == name and ok_d:
                    default = None if d is None else str(d)
                    break
        out.append({"name": name, "default": default, "file": ENVS})
    return out


#: Where a release checks a dtype against the card at start: the CUDA platform (0.11.0 on), the V1
#: GPU worker before it (0.10.1.1). The first file that has the function is read.
DTYPE_CHECKS = ((CUDA_PLATFORM, "check_if_supports_dtype"), (GPU_WORKER, "_check_if_gpu_supports_dtype"))


def read_dtype_rules(root: Path) -> list[dict[str, Any]]:
    """The start-up dtype check by card (:data:`DTYPE_CHECKS`): each ``dtype == torch.X`` branch
    that refuses below ``has_device_capability(N)``."""
    for rel, name in DTYPE_CHECKS:
        if not (root / rel).is_file():
            continue
        try:
            func = _function(_parse(root, rel), name)
        except SourceError:
            continue
        out = []
        for node in ast.walk(func):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.comparators[0], ast.Attribute):
                dtype = node.test.comparators[0].attr
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Call) and _name(inner.func) == "has_device_capability" and inner.args:
                        ok, cap = _literal(inner.args[0])
                        if ok and isinstance(cap, int):
                            out.append({"dtype": dtype, "min_capability": cap, "file": rel, "function": name})
                            break
        if out:
            return out
    return []


def _negated(root: ast.AST, target: ast.AST) -> bool:
    """Whether ``target`` stands under a ``not`` within ``root``."""
    return any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and any(m is target for m in ast.walk(n))
               for n in ast.walk(root))


def _torch_dtypes(node: ast.AST) -> list[str]:
    """``[torch.half, torch.bfloat16]`` -> ``["float16", "bfloat16"]`` (torch's aliases as the dtype's name)."""
    aliases = {"half": "float16", "float": "float32", "double": "float64"}
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise SourceError(f"not a literal list of torch dtypes: {ast.unparse(node)}")
    out = []
    for elt in node.elts:
        if not (isinstance(elt, ast.Attribute) and _name(elt.value) == "torch"):
            raise SourceError(f"not a torch dtype: {ast.unparse(elt)}")
        out.append(aliases.get(elt.attr, elt.attr))
    return out


def _model_config_file(root: Path) -> str:
    """The file of ``ModelConfig``: ``vllm/config/model.py`` (0.11.0 on), ``vllm/config/__init__.py`` before."""
    for rel in (MODEL_CONFIG, CONFIG_INIT):
        if (root / rel).is_file() and "def _resolve_auto_dtype" in (root / rel).read_text(encoding="utf-8"):
            return rel
    raise SourceError(f"neither {MODEL_CONFIG} nor {CONFIG_INIT} defines _resolve_auto_dtype")


def _module_dict(tree: ast.Module, name: str) -> ast.Dict | None:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            target: ast.expr | None = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
            return node.value
    return None


def read_dtype(root: Path) -> dict[str, Any]:
    """How ``--dtype`` becomes the model's dtype at start: the spellings (``_STR_DTYPE_TO_TORCH_DTYPE``),
    the dtypes the CUDA platform supports by capability (``CudaPlatformBase.supported_dtypes``: each
    ``has_device_capability(N)`` branch and the last return), whether ``auto`` falls back to the
    first supported dtype when the checkpoint's is not (``_resolve_auto_dtype`` reads
    ``supported_dtypes``), and the model types a dtype is refused for (``_FLOAT16_NOT_SUPPORTED_MODELS``
    as ``_check_valid_dtype`` refuses float16)."""
    rel = _model_config_file(root)
    tree = _parse(root, rel)
    spellings = {}
    table = _module_dict(tree, "_STR_DTYPE_TO_TORCH_DTYPE")
    if table is None:
        raise SourceError(f"{rel} has no _STR_DTYPE_TO_TORCH_DTYPE")
    for k, v in zip(table.keys, table.values, strict=True):
        ok, key = _literal(k)
        if ok and isinstance(key, str):
            spellings[key] = _torch_dtypes(ast.List(elts=[v]))[0]
    auto = _function(tree, "_resolve_auto_dtype")
    falls_back = "supported_dtypes" in ast.unparse(auto)
    refused = []
    check = _function(tree, "_check_valid_dtype")
    reasons = _module_dict(tree, "_FLOAT16_NOT_SUPPORTED_MODELS")
    refused_dtype = next((_torch_dtypes(ast.List(elts=[c.comparators[0]]))[0] for c in ast.walk(check)
                          if isinstance(c, ast.Compare) and isinstance(c.comparators[0], ast.Attribute)
                          and _name(c.comparators[0].value) == "torch"), None)
    if reasons is not None and refused_dtype is not None:
        for k, v in zip(reasons.keys, reasons.values, strict=True):
            ok_k, model_type = _literal(k)
            ok_v, reason = _literal(v)
            if ok_k and isinstance(model_type, str):
                refused.append({"model_type": model_type, "dtype": refused_dtype, "reason": reason if ok_v else None})
    platform = _function(_parse(root, CUDA_PLATFORM), "supported_dtypes", "CudaPlatformBase")
    by_cap = []
    body = list(platform.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If):
            calls = [c for c in ast.walk(node.test) if isinstance(c, ast.Call) and _name(c.func) == "has_device_capability"
                     and c.args and not _negated(node.test, c)]
            ret = next((r for r in node.body if isinstance(r, ast.Return)), None)
            ok, cap = _literal(calls[0].args[0]) if calls else (False, None)
            if ok and isinstance(cap, int) and ret is not None and ret.value is not None:
                by_cap.append({"min_capability": cap, "dtypes": _torch_dtypes(ret.value)})
            body = list(node.orelse) + body  # an elif chain
        elif isinstance(node, ast.Return) and node.value is not None:
            by_cap.append({"min_capability": 0, "dtypes": _torch_dtypes(node.value)})
    if not by_cap:
        raise SourceError(f"{CUDA_PLATFORM} CudaPlatformBase.supported_dtypes has no capability branches")
    return {
        "spellings": spellings, "supported_by_capability": by_cap,
        "auto_falls_back": falls_back, "refused_by_model_type": refused,
        "files": {"spellings": f"{rel} _STR_DTYPE_TO_TORCH_DTYPE",
                  "supported_by_capability": f"{CUDA_PLATFORM} CudaPlatformBase.supported_dtypes",
                  "auto_falls_back": f"{rel} _resolve_auto_dtype",
                  "refused_by_model_type": f"{rel} _check_valid_dtype (_FLOAT16_NOT_SUPPORTED_MODELS)"},
    }


def _class_method(tree: ast.Module, cls: str, name: str) -> ast.FunctionDef | None:
    """Method ``name`` of class ``cls`` in ``tree``, or of its first base defined in the same file."""
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    seen: set[str] = set()
    while cls in classes and cls not in seen:
        seen.add(cls)
        node = classes[cls]
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        cls = _name(node.bases[0]) if node.bases else ""
    return None


def _literal_return(fn: ast.FunctionDef | None) -> ast.AST | None:
    rets = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return)] if fn is not None else []
    return rets[0] if len(rets) == 1 else None


def _compared(node: ast.AST, subject: Any) -> tuple[bool, set[Any]]:
    """(whether ``subject(expr)`` is compared at all, the literals it is compared with) in ``node``:
    ``x == "a"``, ``x != "a"``, ``x is None``, ``x in ["a", "b"]``."""
    seen, values = False, set[Any]()
    for cmp in ast.walk(node):
        if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and subject(cmp.left)):
            continue
        seen = True
        ok, value = _literal(cmp.comparators[0])
        if ok and isinstance(cmp.ops[0], (ast.In, ast.NotIn)) and isinstance(value, (list, tuple, set)):
            values.update(v for v in value if isinstance(v, str))
        elif ok and (value is None or isinstance(value, str)):
            values.add(value)
    return seen, values


def _is_quant_method(node: ast.AST) -> bool:
    """``quant_method`` or ``cfg.get("quant_method", ...)`` (optionally ``.lower()``)."""
    if isinstance(node, ast.Call) and _name(node.func) == "lower" and isinstance(node.func, ast.Attribute):
        node = node.func.value
    if isinstance(node, ast.Name):
        return node.id == "quant_method"
    return (isinstance(node, ast.Call) and _name(node.func) == "get" and bool(node.args)
            and _literal(node.args[0]) == (True, "quant_method"))


def read_override(tree: ast.Module, cls: str) -> dict[str, Any] | None:
    """What ``cls.override_quantization_method`` takes over, or None when the class does not
    define one: ``accepts``, the ``--quantization`` values it overrides (``None``: the flag not
    given), null when it does not look at the flag; ``reads``, the checkpoint ``quant_method``
    values it (or the class's methods it calls) compares with, null when it compares none
    (a ``checkpoint_format`` or an algorithm name decides); ``cuda``, false when it returns
    None unless the platform is another one (``if not current_platform.is_rocm(): return None``)."""
    fn = _class_method(tree, cls, "override_quantization_method")
    if fn is None or all(isinstance(n, ast.Return) and _literal(n.value) == (True, None) for n in ast.walk(fn)
                         if isinstance(n, ast.Return)):
        return None
    env: dict[str, ast.AST] = {}
    tests: list[ast.AST] = []
    cuda = True
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.If):
            returns = [r for r in ast.walk(stmt) if isinstance(r, ast.Return)]
            gives = any(_literal(r.value) != (True, None) for r in returns)
            text = ast.unparse(stmt.test)
            if not gives and returns and "current_platform.is_" in text and "is_cuda" not in text:
                cuda = False
            if gives:
                tests.append(stmt.test)
                other = [c for c in ast.walk(stmt.test) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                         and _name(c.func.value) == "current_platform" and c.func.attr.startswith("is_")
                         and c.func.attr != "is_cuda" and not _negated(stmt.test, c)]
                if other and isinstance(stmt.test, (ast.Call, ast.BoolOp)) and \
                        (isinstance(stmt.test, ast.Call) or isinstance(stmt.test.op, ast.And)):
                    cuda = False
    expanded = [ast.parse(ast.unparse(t), mode="eval") for t in tests]
    for t in expanded:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and n.id in env:
                expanded.append(ast.Expression(body=env[n.id]))  # type: ignore[arg-type]
    seen, accepts = False, set[Any]()
    for t in expanded:
        s_, v_ = _compared(t, lambda n: isinstance(n, ast.Name) and n.id == "user_quant")
        seen, accepts = seen or s_, accepts | v_
    helpers = [_class_method(tree, cls, _name(c.func)) for c in ast.walk(fn) if isinstance(c, ast.Call)
               and isinstance(c.func, ast.Attribute) and _name(c.func.value) == "cls" and c.func.attr != "get_name"]
    reads: set[Any] = set()
    for node in [fn, *[h for h in helpers if h is not None]]:
        reads |= _compared(node, _is_quant_method)[1]
    return {"accepts": sorted(accepts, key=lambda v: (v is not None, v or "")) if seen else None,
            "reads": sorted(r for r in reads if isinstance(r, str)) or None, "cuda": cuda}


def read_quantization(root: Path) -> list[dict[str, Any]]:
    """Each method of ``QuantizationMethods`` with its config class (``get_quantization_config``'s
    table) and, from the class's file, ``get_min_capability`` and ``get_supported_act_dtypes``
    where they return a literal, and its ``override_quantization_method`` (:func:`read_override`)."""
    tree = _parse(root, QUANT_INIT)
    methods: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and _name(node.targets[0]) == "QuantizationMethods":
            methods = [m for h in type_hints(Index(root, []), node.value) if isinstance(h, tuple) for m in h[1]]
    func = _function(tree, "get_quantization_config")
    imports: dict[str, str] = {}
    table: dict[str, str] = {}
    for inner in ast.walk(func):
        if isinstance(inner, ast.ImportFrom) and inner.level == 1 and inner.module:
            for alias in inner.names:
                imports[alias.asname or alias.name] = inner.module
        if isinstance(inner, ast.AnnAssign | ast.Assign) and isinstance(inner.value, ast.Dict):
            for k, v in zip(inner.value.keys, inner.value.values, strict=True):
                ok, key = _literal(k)
                if ok and isinstance(key, str):
                    table[key] = _name(v)
    base = Path(QUANT_INIT).parent
    out = []
    for method in methods:
        cls = table.get(method)
        cap = None
        act: list[str] | None = None
        override = None
        rel = QUANT_INIT
        if cls and cls in imports:
            rel = str(base / (imports[cls].replace(".", "/") + ".py"))
            if (root / rel).is_file():
                mod = _parse(root, rel)
                ok, value = _literal(_literal_return(_class_method(mod, cls, "get_min_capability")))
                cap = value if ok and isinstance(value, int) else None
                ret = _literal_return(_class_method(mod, cls, "get_supported_act_dtypes"))
                with contextlib.suppress(SourceError):
                    act = _torch_dtypes(ret) if ret is not None else None
                override = read_override(mod, cls)
        out.append({"method": method, "config_class": cls, "min_capability": cap, "act_dtypes": act,
                    "override": override, "file": rel})
    return out


def read_checkpoint_rule(root: Path) -> dict[str, Any]:
    """How the release matches ``--quantization`` with the checkpoint's ``quant_method``
    (``ModelConfig._verify_quantization``): the names it rewrites (``.replace("compressed_tensors",
    "compressed-tensors")``), the override methods in the order it tries them (``overrides = [...]``),
    and where it checks the model's dtype against the method's ``get_supported_act_dtypes``."""
    rel = _model_config_file(root)
    verify = _function(_parse(root, rel), "_verify_quantization")
    renames: dict[str, str] = {}
    order: list[str] = []
    lowered = False
    normalized_in = f"{rel} ModelConfig._verify_quantization"
    for fn in [verify, *_normalizers(root)]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and _name(node.func) == "replace" and len(node.args) == 2:
                ok_a, a = _literal(node.args[0])
                ok_b, b = _literal(node.args[1])
                if ok_a and ok_b and isinstance(a, str) and isinstance(b, str):
                    renames[a] = b
                    if fn is not verify:
                        normalized_in = f"{ARCH_CONVERTOR} {fn.name}"
            if isinstance(node, ast.Call) and _name(node.func) == "lower" and isinstance(node.func, ast.Attribute) \
                    and _is_quant_method(node.func.value):
                lowered = True
            if isinstance(node, ast.Assign) and _name(node.targets[0]) == "overrides":
                ok, value = _literal(node.value)
                order = list(value) if ok else []
    checked = None
    for cfg in [*_config_files(root)]:
        tree = _parse(root, cfg)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(c, ast.Call) and _name(c.func) == "get_supported_act_dtypes" for c in ast.walk(node)):
                cls = next((c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and node in c.body), None)
                checked = f"{cfg} {cls + '.' if cls else ''}{node.name}"
                break
        if checked:
            break
    return {"lowercased": lowered, "renames": renames, "override_order": order,
            "file": f"{rel} ModelConfig._verify_quantization", "normalized_in": normalized_in,
            "act_dtypes_checked": checked}


def _normalizers(root: Path) -> list[ast.FunctionDef]:
    """The functions of ``vllm/transformers_utils/model_arch_config_convertor.py`` (0.14 on) that
    rewrite the checkpoint's ``quant_method`` before ``_verify_quantization`` reads it."""
    if not (root / ARCH_CONVERTOR).is_file():
        return []
    return [fn for fn in ast.walk(_parse(root, ARCH_CONVERTOR)) if isinstance(fn, ast.FunctionDef)
            and any(isinstance(c, ast.Call) and _name(c.func) == "replace" for c in ast.walk(fn))
            and "quant_method" in ast.unparse(fn)]


def read_parsers(root: Path) -> list[dict[str, Any]]:
    """Parser names by kind: ``@...Manager.register_module("name")`` (or a list of names) in the
    package's modules, and the keys of its ``_*_PARSERS_TO_REGISTER`` table."""
    out = []
    for kind, packages in PARSER_PACKAGES.items():
        for package in packages:
            folder = root / package
            if not folder.is_dir():
                continue
            names: set[str] = set()
            for path in sorted(folder.glob("*.py")):
                tree = ast.parse(path.read_text(encoding="utf-8"))
                for node in ast.walk(tree):
                    if isinstance(node, ast.Call) and _name(node.func) in ("register_module", "register_lazy_module"):
                        for arg in [*node.args[:1], *[k.value for k in node.keywords if k.arg in ("name", "module_name")]]:
                            ok, value = _literal(arg)
                            if ok:
                                names.update([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                            "PARSERS" in _name(node.targets[0]).upper():
                        for k in node.value.keys:
                            ok, value = _literal(k)
                            if ok and isinstance(value, str):
                                names.add(value)
            if names:
                out.append({"kind": kind, "names": sorted(names), "file": package + "/"})
                break
    return out


def _capability(text: str) -> int:
    """``"7.0"`` -> 70, ``"10.0"`` -> 100, ``"12.0a"`` -> 120."""
    major, _, minor = text.strip().partition(".")
    return int(major) * 10 + int(re.sub(r"\D.*", "", minor) or 0)


def read_image_build(root: Path) -> dict[str, Any]:
    """The default image build: CUDA (Dockerfile ``ARG CUDA_VERSION``), torch
    (requirements/cuda.txt), and the capabilities its kernels are built for: the Dockerfile's
    ``torch_cuda_arch_list`` within CMakeLists.txt's ``CUDA_SUPPORTED_ARCHS`` for that CUDA."""
    docker = (root / DOCKERFILE).read_text(encoding="utf-8") if (root / DOCKERFILE).is_file() else ""
    cuda = re.search(r"^ARG CUDA_VERSION=(\S+)", docker, re.M)
    archs = re.search(r"^ARG torch_cuda_arch_list=['\"]?([^'\"\n]+)", docker, re.M)
    if not cuda or not archs:
        raise SourceError(f"{DOCKERFILE} names no CUDA_VERSION or torch_cuda_arch_list")
    requirements = (root / CUDA_REQUIREMENTS).read_text(encoding="utf-8") if (root / CUDA_REQUIREMENTS).is_file() else ""
    torch = re.search(r"^torch\s*==\s*(\S+)", requirements, re.M)
    supported = cmake_arch_branches(root)
    cuda_mm = tuple(int(x) for x in cuda.group(1).split(".")[:2])
    allowed = next((caps for since, caps in supported if since is None or cuda_mm >= since), None)
    listed = [_capability(a.replace("+PTX", "")) for a in archs.group(1).split()]
    caps = sorted(c for c in listed if allowed is None or c in allowed)
    return {
        "variant": "default", "cuda": cuda.group(1), "torch": torch.group(1) if torch else None,
        "capabilities": caps, "files": [DOCKERFILE, CMAKE, CUDA_REQUIREMENTS],
    }


def cmake_arch_branches(root: Path) -> list[tuple[tuple[int, ...] | None, list[int]]]:
    """CMakeLists.txt's ``set(CUDA_SUPPORTED_ARCHS ...)`` by the CUDA version its branch needs
    (``VERSION_GREATER_EQUAL 12.8`` -> (12, 8); the ``else()`` branch: None), in order."""
    text = (root / CMAKE).read_text(encoding="utf-8") if (root / CMAKE).is_file() else ""
    first = text.find("set(CUDA_SUPPORTED_ARCHS")
    if first < 0:
        return []
    block_start = text.rfind("\nif", 0, first)
    block_end = text.find("endif()", first)
    block = text[block_start:block_end]
    out: list[tuple[tuple[int, ...] | None, list[int]]] = []
    since: tuple[int, ...] | None = None
    token = re.compile(r'(?:else)?if\s*\(([^)]*)\)|else\s*\(\s*\)|set\(CUDA_SUPPORTED_ARCHS\s+"([^"]+)"\)', re.S)
    for m in token.finditer(block):
        if m.group(2) is not None:
            out.append((since, [_capability(a) for a in m.group(2).split(";")]))
        elif m.group(1) is not None:
            cond = re.search(r"VERSION_GREATER_EQUAL\s+([\d.]+)", m.group(1))
            since = tuple(int(x) for x in cond.group(1).split(".")) if cond else None
        else:
            since = None
    return out


def read_sampler(root: Path) -> dict[str, Any]:
    """The V1 top-k/top-p sampler: whether it takes FlashInfer's kernels by default
    (``envs.VLLM_USE_FLASHINFER_SAMPLER is not False``: unset is on; a plain truth test: unset is
    off), what it does on a card FlashInfer does not support (``raise`` in vLLM's own capability
    check; a fall back to the native path; or no check, so FlashInfer's kernel raises when it
    samples), and the fewest rows from which ``apply_top_k_top_p`` masks without a sort."""
    tree = _parse(root, SAMPLER)
    init = _function(tree, "__init__", "TopKTopPSampler")
    default_on = None
    on_unsupported = "not checked"
    for node in ast.walk(init):
        if isinstance(node, ast.If) and "VLLM_USE_FLASHINFER_SAMPLER" in ast.unparse(node.test):
            test = node.test
            if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.IsNot):
                default_on = True
            elif isinstance(test, ast.Attribute):
                default_on = False
            body = ast.Module(body=node.body, type_ignores=[])
            text = ast.unparse(body)
            if "capability" in text:
                on_unsupported = "raises" if any(isinstance(n, ast.Raise) for n in ast.walk(body)) else "falls back"
            break
    sort_free_rows = None
    try:
        apply = _function(tree, "apply_top_k_top_p")
        for node in ast.walk(apply):
            if isinstance(node, ast.If) and isinstance(node.body[0], ast.Return):
                ret = ast.unparse(node.body[0])
                if "triton" in ret:
                    for cmp in ast.walk(node.test):
                        if isinstance(cmp, ast.Compare) and isinstance(cmp.ops[0], ast.GtE):
                            ok, rows = _literal(cmp.comparators[0])
                            sort_free_rows = rows if ok else None
    except SourceError:
        pass
    return {"flashinfer_by_default": default_on, "flashinfer_on_unsupported_card": on_unsupported,
            "sort_free_from_rows": sort_free_rows, "file": SAMPLER}


def read_release(root: Path) -> dict[str, Any]:
    """Every fact of the contract read from the unpacked release at ``root``."""
    return {
        "flags": read_flags(root),
        "env": read_env(root),
        "dtype_rules": read_dtype_rules(root),
        "dtype": read_dtype(root),
        "quantization": read_quantization(root),
        "quantization_checkpoint": read_checkpoint_rule(root),
        "parsers": read_parsers(root),
        "image_builds": [read_image_build(root)],
        "sampler": read_sampler(root),
    }
