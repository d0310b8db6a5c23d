"""The op catalogue holds together: every schema's devices have kernels, every public op function
is generated from a schema and every schema with a public name has its function, and a new
schema reaches ``ndd`` without touching the front end."""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import ndd
from compiler.ops.arithmetic import MATH_FUNCTIONS
from compiler.promotion import OPS
from compiler.schema import REGISTRY
from runtime.kernels import registry as kernels

ROOT = Path(__file__).resolve().parent.parent

# Public functions of the op namespaces that are not ops (constructors, settings, tools).
NOT_OPS = {
    "ndd": {"tensor", "as_tensor", "batch", "as_batch", "dtype", "device", "set_num_threads",
            "get_num_threads", "imread", "explain", "set_max_image_pixels",
            "get_max_image_pixels", "stream", "get_default_stream", "set_default_stream",
            "get_current_stream", "set_current_stream", "type_id"},
    "ndd.decoders": set(),
    "ndd.random": {"get_default_rng", "set_seed"},
    "ndd.noise": set(),
    "ndd.segmentation": set(),
    "ndd.reductions": set(),
    "ndd.transforms": set(),
    "ndd.experimental": set(),
    "ndd.experimental.decoders": set(),
    "ndd.io.file": set(),
}


def _module(namespace: str) -> types.ModuleType:
    """``ndd`` or its namespace module (dotted: ``"experimental.decoders"``)."""
    module = ndd
    for part in namespace.split(".") if namespace else ():
        module = getattr(module, part)
    return module


def _public_functions(module: types.ModuleType) -> set[str]:
    """Names in ``module.__all__`` bound to plain functions (not classes, modules or dtypes)."""
    return {name for name in module.__all__
            if inspect.isfunction(getattr(module, name))}


@pytest.fixture(scope="module")
def kernels_loaded():
    """One op run, so the runtime has imported its kernel modules whatever its loading order."""
    with ndd.EvalMode.sync_cpu:
        np.asarray(ndd.copy(ndd.tensor(np.zeros(1, np.uint8))))


@pytest.mark.parametrize("schema", list(REGISTRY.values()), ids=lambda s: s.name)
def test_declared_devices_have_kernels(schema, kernels_loaded):
    assert schema.devices, f"{schema.name} declares no device"
    for device in schema.devices:
        try:
            kernels.lookup(schema.name, device)
        except NotImplementedError:
            pytest.fail(f"{schema.name} declares device {device!r} but no kernel is registered "
                        f"for it")


@pytest.mark.parametrize("schema", [s for s in REGISTRY.values() if s.public_name],
                         ids=lambda s: s.name)
def test_every_public_schema_has_its_function(schema):
    module = _module(schema.namespace)
    fn = getattr(module, schema.function_name, None)
    assert inspect.isfunction(fn), f"ndd.{schema.public_name} is missing"
    assert schema.function_name in module.__all__
    assert fn.__name__ == schema.function_name
    assert fn.__module__ == module.__name__
    params = inspect.signature(fn).parameters
    assert {"batch_size", "device"} <= set(params)
    for name in schema.deprecated:      # accepted with a warning, never advertised
        assert name not in params, f"deprecated argument {name!r} is in the signature"
    public_args = [a.name for a in schema.args if not a.name.startswith("_")]
    if schema.name != "random.choice":  # hand-written: ``a`` is positional (ndd/random.py)
        assert set(public_args) <= set(params)
    assert ("rng" in params) == schema.is_random


@pytest.mark.parametrize("module_name", sorted(NOT_OPS))
def test_every_public_op_function_has_a_schema(module_name):
    namespace = module_name.partition(".")[2]
    module = _module(namespace)
    ops = _public_functions(module) - NOT_OPS[module_name]
    declared = {s.function_name for s in REGISTRY.values() if s.namespace == namespace}
    assert ops == declared, (f"{module_name}: functions without a schema: "
                             f"{sorted(ops - declared)}; schemas without a function: "
                             f"{sorted(declared - ops)}")
    assert NOT_OPS[module_name] <= set(module.__all__)


def test_public_namespaces_exist():
    for schema in REGISTRY.values():
        if schema.public_name is not None:
            assert isinstance(_module(schema.namespace), types.ModuleType), schema.public_name


def test_internal_ops_have_no_public_name():
    for schema in REGISTRY.values():
        if "fused" in schema.traits:
            assert schema.public_name is None, f"{schema.name} is created by the fuse pass"
    internal = {s.name for s in REGISTRY.values() if s.public_name is None}
    assert {"fused.image", "elementwise_fused", "subscript", "transfer",
            "arithmetic"} <= internal


def test_math_functions_are_the_arithmetic_table():
    """ndd.math is made from compiler.ops.arithmetic.MATH_FUNCTIONS, each an operation of the
    arithmetic schema with the number of operands of its signature, and each runs."""
    assert ndd.math.__all__ == [name for name, _ in MATH_FUNCTIONS]
    x = ndd.tensor(np.array([0.25, 0.5], np.float32))
    with ndd.EvalMode.sync_cpu:
        for name, arity in MATH_FUNCTIONS:
            fn = getattr(ndd.math, name)
            assert OPS[name].arity == arity
            assert len(inspect.signature(fn).parameters) == arity
            assert fn.__name__ == name and fn.__module__ == "ndd.math"
            out = np.asarray(fn(*[x] * arity))
            assert out.shape == (2,)


def test_all_is_derived_from_the_registry():
    for namespace in ("", "decoders", "random", "noise", "reductions", "transforms",
                      "experimental", "experimental.decoders", "io.file", "segmentation"):
        module = _module(namespace)
        names = [s.function_name for s in REGISTRY.values() if s.namespace == namespace]
        in_all = [n for n in module.__all__ if n in names]
        assert in_all == names      # declaration order


def test_a_new_schema_reaches_ndd_without_front_end_changes():
    """A schema (and a kernel) declared before ``import ndd`` is an ``ndd`` function, listed in
    ``__all__``, with its docstring, and runs; the same in a namespace."""
    script = textwrap.dedent("""
        import numpy as np
        from compiler import ops  # noqa: F401
        from compiler.schema import ArgSpec, OpSchema, register
        from runtime.kernels.registry import register as register_kernel

        for public in ("probe_twice", "decoders.probe_twice"):
            name = "probe." + public
            register(OpSchema(name, ("input",),
                              (ArgSpec("factor", "int", 2, doc="Multiplier."),),
                              lambda metas, args: [metas[0]], public_name=public,
                              doc="Multiplies by factor."))
            register_kernel(name)(
                lambda ctx, inputs, args: [[x * args["factor"] for x in inputs[0]]])

        import ndd
        for module in (ndd, ndd.decoders):
            fn = module.probe_twice
            assert "probe_twice" in module.__all__, module.__all__
            assert fn.__doc__.startswith("Multiplies by factor."), fn.__doc__
            with ndd.EvalMode.sync_cpu:
                out = fn(ndd.tensor(np.array([1, 2], np.int32)), factor=3)
            assert np.asarray(out).tolist() == [3, 6]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
