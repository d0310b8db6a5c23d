"""Datasets for examples, tests and benchmarks (built offline from photos in PyPI packages).

``build_sample_dataset``, ``build_edge_cases`` and ``default_root`` live in
:mod:`ndd.datasets.sample`; they are loaded on first access so that
``python -m ndd.datasets.sample`` runs the module only once.
"""

__all__ = ["build_sample_dataset", "build_edge_cases", "default_root"]


def __getattr__(name):
    if name in __all__:
        from ndd.datasets import sample

        return getattr(sample, name)
    raise AttributeError(f"module 'ndd.datasets' has no attribute {name!r}")
