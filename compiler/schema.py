"""Op schemas: every operator is declared once, here-style, and everything else is derived.

A schema names the op, its inputs, its arguments (type, default, whether a per-sample batch may be
given), DALI's deprecated arguments it still accepts, its outputs with a metadata-inference rule,
its traits, the devices it has kernels for and its public name. The front end generates the
public ``ndd.<op>`` functions (signature and docstring) by walking the registry
(``public_schemas``); the compiler reads the traits (``random``, ``stateful``, ``elementwise``...);
the runtime looks kernels up by op name and device.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from compiler.ir import ValueMeta
from compiler.types import DTYPES, lookup

REQUIRED = object()   # sentinel default: the argument must be given


class ArgError(ValueError):
    """An argument value is invalid; the message names op, argument, value and expectation."""


@dataclass(frozen=True)
class ArgSpec:
    """One argument of an op.

    Attributes
    ----------
    name : str
    type : str
        ``int``, ``float``, ``bool``, ``str``, ``int[]``, ``float[]``, ``dtype``, ``layout``,
        ``image_type``, ``interp``, ``any``.
    default : Any
        The default (``REQUIRED`` for a mandatory argument; None for "not set").
    tensor : bool
        Whether a per-sample value (a Batch) may be given.
    doc : str
    choices : tuple | None
        Allowed values for ``str``-typed arguments.
    length : int | None
        Required length for list-typed arguments (a scalar is broadcast when ``broadcast``).
    """

    name: str
    type: str
    default: Any = None
    tensor: bool = False
    doc: str = ""
    choices: tuple | None = None
    length: int | None = None


IMAGE_TYPES = ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA")
INTERP_TYPES = ("nn", "linear", "cubic", "lanczos3", "triangular", "gaussian")


@dataclass
class OpSchema:
    """The declaration of one operator.

    ``infer(input_metas, args) -> list[ValueMeta]`` computes output metadata (dtype, ndim,
    layout) without data. ``traits`` may contain (each read by the compiler): ``random``,
    ``stateful``, ``source``, ``has_side_effects`` (never merged by CSE; ``has_side_effects``
    nodes are never removed by DCE), ``elementwise`` (per-element ops the elementwise fusion
    rule chains), ``fused`` (created by the fuse pass), ``batch_only`` (no Tensor call: the
    front end requires a ``batch_size`` or a Batch input).

    ``public_name`` is where users find the op: ``"resize"`` is ``ndd.resize``,
    ``"decoders.image"`` is ``ndd.decoders.image``. None marks an internal op (fused ops,
    indexing, transfers, the arithmetic behind operators and ``ndd.math``) that no generated
    function exposes.

    ``deprecated`` maps DALI's deprecated argument names, accepted with a DeprecationWarning, to
    the argument each is an alias of, or to None when DALI no longer uses it (the value is
    dropped). They are not part of the generated signature.

    ``devices`` are the device kinds with a registered kernel (a test checks it).
    """

    name: str
    inputs: tuple[str, ...]
    args: tuple[ArgSpec, ...]
    infer: Callable[[list[ValueMeta], dict], list[ValueMeta]]
    doc: str = ""
    traits: frozenset = frozenset()
    num_outputs: int = 1
    min_inputs: int | None = None
    devices: tuple[str, ...] = ("cpu",)
    variadic: bool = False
    public_name: str | None = None
    deprecated: dict[str, str | None] = field(default_factory=dict)
    arg_map: dict[str, ArgSpec] = field(init=False)

    def __post_init__(self):
        self.arg_map = {a.name: a for a in self.args}
        if self.min_inputs is None:
            self.min_inputs = len(self.inputs)
        for old, new in self.deprecated.items():
            if old in self.arg_map or (new is not None and new not in self.arg_map):
                raise ValueError(f"{self.name}: deprecated argument {old!r} must not be an "
                                 f"argument and must alias one (or None), got {new!r}")

    @property
    def namespace(self) -> str | None:
        """``""`` for ``ndd.<op>``, ``"decoders"`` for ``ndd.decoders.<op>``; None if internal."""
        if self.public_name is None:
            return None
        return self.public_name.rpartition(".")[0]

    @property
    def function_name(self) -> str | None:
        """The public function's own name (``"image"`` for ``decoders.image``)."""
        if self.public_name is None:
            return None
        return self.public_name.rpartition(".")[2]

    @property
    def is_random(self) -> bool:
        return "random" in self.traits

    @property
    def is_pure(self) -> bool:
        return not (self.traits & {"random", "stateful", "has_side_effects", "source"})


REGISTRY: dict[str, OpSchema] = {}


def register(schema: OpSchema) -> OpSchema:
    if schema.name in REGISTRY:
        raise ValueError(f"op {schema.name!r} is declared twice")
    if schema.public_name is not None:
        for other in REGISTRY.values():
            if other.public_name == schema.public_name:
                raise ValueError(f"public name {schema.public_name!r} is declared by both "
                                 f"{other.name!r} and {schema.name!r}")
    REGISTRY[schema.name] = schema
    return schema


def public_schemas(namespace: str) -> list[OpSchema]:
    """The schemas of the public functions of ``ndd`` (``namespace=""``) or of
    ``ndd.<namespace>``, in declaration order."""
    return [s for s in REGISTRY.values() if s.namespace == namespace]


def get(name: str) -> OpSchema:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}") from None


# ---------------------------------------------------------------- argument conversion
def _num(v, what, op, name):
    if isinstance(v, bool):
        if what == "float":
            return float(v)
        return int(v)
    if hasattr(v, "item") and getattr(v, "shape", None) in ((), (1,)):
        v = v.item()
    if what == "int":
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise ArgError(f"{op}: argument '{name}' must be an integer, got {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    raise ArgError(f"{op}: argument '{name}' must be a number, got {v!r}")


def convert_arg(op: str, spec: ArgSpec, value: Any) -> Any:
    """Convert a user value to the canonical hashable form for ``spec``.

    Enum objects are expected to be converted to their canonical strings by the front end first.

    Raises
    ------
    ArgError
        Naming op, argument, the value and what was expected.
    """
    t = spec.type
    name = spec.name
    if value is None:
        return None
    if t == "any":
        return _hashable(value)
    if t in ("int", "float"):
        return _num(value, t, op, name)
    if t == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        if hasattr(value, "item") and getattr(value, "shape", None) in ((), (1,)):
            return bool(value.item())
        raise ArgError(f"{op}: argument '{name}' must be a bool, got {value!r}")
    if t in ("int[]", "float[]"):
        base = t[:-2]
        if hasattr(value, "tolist"):
            value = value.tolist()
        if isinstance(value, (list, tuple)) and len(value) >= _LONG_LIST:
            return _long_list(op, spec, value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) or isinstance(value, bool):
            items = (value,)
        elif isinstance(value, (list, tuple)):
            items = tuple(value)
        else:
            raise ArgError(f"{op}: argument '{name}' must be a number or a list of numbers, "
                           f"got {value!r}")
        out = tuple(_num(v, base, op, name) for v in items)
        if spec.length is not None and len(out) not in (1, spec.length):
            raise ArgError(f"{op}: argument '{name}' must have {spec.length} elements, "
                           f"got {len(out)}: {value!r}")
        return out
    if t == "str":
        if not isinstance(value, str):
            raise ArgError(f"{op}: argument '{name}' must be a string, got {value!r}")
        if spec.choices is not None:
            match = [c for c in spec.choices if c.lower() == value.lower()]
            if not match:
                raise ArgError(f"{op}: argument '{name}' must be one of "
                               f"{', '.join(map(repr, spec.choices))}; got {value!r}")
            return match[0]
        return value
    if t == "dtype":
        if isinstance(value, str):
            try:
                return lookup(value).ir_name
            except ValueError as e:
                raise ArgError(f"{op}: argument '{name}': {e}") from None
        raise ArgError(f"{op}: argument '{name}' must be a dtype, got {value!r}")
    if t == "layout":
        if not isinstance(value, str):
            raise ArgError(f"{op}: argument '{name}' must be a layout string such as 'HWC', "
                           f"got {value!r}")
        return value
    if t == "image_type":
        if isinstance(value, str):
            for c in IMAGE_TYPES:
                if c.lower() == value.lower():
                    return c
        raise ArgError(f"{op}: argument '{name}' must be one of {', '.join(IMAGE_TYPES)}, "
                       f"got {value!r}")
    if t == "interp":
        if isinstance(value, str):
            v = value.lower().removeprefix("interp_")
            if v in INTERP_TYPES:
                return v
        raise ArgError(f"{op}: argument '{name}' must be one of {', '.join(INTERP_TYPES)} "
                       f"(or ndd.types.INTERP_*), got {value!r}")
    raise AssertionError(f"unknown arg type {t}")


_LONG_LIST = 64         # lists at least this long are converted once per content
_LONG_CACHE_SIZE = 16
_long_cache: dict = {}


def _long_list(op: str, spec: ArgSpec, value) -> tuple:
    """``convert_arg`` of a long number list (SSD's 8732 anchors are 34928 floats, ~10 ms to
    convert element by element), cached by its content: a repeated list costs a hash and a
    comparison, and converts to the same tuple object each time (so kernels can keep what
    they derive from it by identity). Equal contents always convert to equal tuples (1, 1.0
    and True are the same number for ``int[]`` and ``float[]``), so the cache is exact."""
    items = tuple(value)
    key = (spec.type, spec.length, items)
    try:
        return _long_cache[key]
    except (KeyError, TypeError):   # TypeError: an unhashable element, reported below
        pass
    out = tuple(_num(v, spec.type[:-2], op, spec.name) for v in items)
    if spec.length is not None and len(out) not in (1, spec.length):
        raise ArgError(f"{op}: argument '{spec.name}' must have {spec.length} elements, "
                       f"got {len(out)}: {value!r}")
    if len(_long_cache) >= _LONG_CACHE_SIZE:
        try:        # the oldest entry (another thread may be evicting too)
            del _long_cache[next(iter(_long_cache))]
        except (StopIteration, KeyError, RuntimeError):
            pass
    _long_cache[key] = out
    return out


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return _hashable(v.tolist())
    return v


# ---------------------------------------------------------------- inference helpers
def same_as_input(metas: list[ValueMeta], args: dict) -> list[ValueMeta]:
    """Output has the input's metadata (dtype overridden by a ``dtype`` argument if given)."""
    m = metas[0]
    dt = args.get("dtype") or m.dtype
    return [m.with_(dtype=dt)]


def check_dtype_name(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}")
    return name
