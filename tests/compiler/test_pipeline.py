import pathlib
import subprocess
import sys

from compiler import pipeline


def test_pass_order():
    assert [n for n, _ in pipeline.PASSES] == ["dce", "cse", "fuse", "place"]


def test_compiler_imports_no_numpy_torch_cupy():
    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import sys, pkgutil, importlib, compiler, compiler.ops, compiler.pipeline, "
            "compiler.fusion_rules, compiler.explain, compiler.checker\n"
            "bad = [m for m in ('numpy', 'torch', 'cupy') if m in sys.modules]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == ""
    for f in (root / "compiler").rglob("*.py"):
        text = f.read_text()
        for mod in ("numpy", "torch", "cupy"):
            assert f"import {mod}" not in text, f"{f} imports {mod}"


def test_every_pass_returns_a_pass_result():
    from compiler.ir import Graph
    from compiler.passes.result import PassResult
    for name, fn in pipeline.PASSES:
        res = fn(Graph([], []))
        assert isinstance(res, PassResult) and not res.modified and res.notes == [], name


def test_plan_carries_cse_aliases_and_notes():
    from tests.compiler._graphs import graph, leaf, node
    x = leaf()
    a, b = node("flip", [x], {"horizontal": 1}), node("flip", [x], {"horizontal": 1})
    plan = pipeline.compile_graph(graph([a.outputs[0], b.outputs[0]]), dry_run=True)
    assert [s.node.op for s in plan.steps] == ["flip"]
    (alias,) = plan.aliases          # one of the two flips is merged into the other
    assert {alias.removed.id, alias.kept.id} == {a.outputs[0].id, b.outputs[0].id}
    assert plan.steps[0].node.outputs[0] is alias.kept
    assert any(name == "cse" and "merged flip" in msg for name, msg in plan.notes)


def test_declared_traits_are_read_by_the_compiler():
    import compiler.ops  # noqa: F401
    from compiler.schema import REGISTRY
    read = {"random", "stateful", "source", "has_side_effects", "elementwise", "fused"}
    # read by the front end instead (ndd/_invoke.py: no Tensor call without batch_size)
    front_end = {"batch_only"}
    invoke = (pathlib.Path(__file__).resolve().parents[2] / "ndd" / "_invoke.py").read_text()
    assert all(f'"{t}" in schema.traits' in invoke for t in front_end)
    declared = set().union(*(s.traits for s in REGISTRY.values()))
    assert declared <= read | front_end, declared - read - front_end


def test_elementwise_rule_matches_on_the_trait():
    from compiler.fusion_rules import RULES
    rule = next(r for r in RULES if r.name == "elementwise")
    assert all(rule.producer.matches(op) for op in ("arithmetic", "cast", "elementwise_fused"))
    assert rule.consumer.matches("cast") and not rule.consumer.matches("elementwise_fused")
    assert not rule.producer.matches("resize")
