"""The ``ndd`` command and what only it needs: ``ndd graph`` (``graph.py``, pictures drawn by
``render.py``) and ``ndd bench`` (``bench.py`` running the pipelines of
``bench_pipelines.py``); ``cli.py`` is the entry point, ``args.py`` its arguments.

The library (``import ndd``) never imports this package.
"""
