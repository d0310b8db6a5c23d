#!/usr/bin/env bash
# One entry point for a fresh machine: creates .venv (once), installs ndd with its test and
# oracle extras, then runs what was asked:
#   bash run.sh main   [args]  - the training-style loader over the sample photos (images/s, loss)
#   bash run.sh test   [args]  - the test suite (pytest)
#   bash run.sh bench  [args]  - ndd vs DALI dynamic mode, eager train/val pipelines
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=${NDD_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.ndd-installed" ] || [ pyproject.toml -nt "$VENV/.ndd-installed" ]; then
  echo "[run.sh] setting up $VENV (first run takes a few minutes)" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  # torch 2.13.0 CPU build first, so nothing pulls a multi-GB CUDA build.
  "$VENV/bin/python" -m pip install -q "torch==2.13.0"
  "$VENV/bin/python" -m pip install -q -e ".[test,oracle,data]"
  touch "$VENV/.ndd-installed"
fi
what=${1:-main}
shift || true
case "$what" in
  main)  exec "$VENV/bin/python" examples/train_loader.py "$@" ;;
  val)   exec "$VENV/bin/python" examples/val_loader.py "$@" ;;
  test)  exec "$VENV/bin/python" -m pytest -q "$@" ;;
  bench) exec "$VENV/bin/python" benchmarks/eager_vs_dali.py "$@" ;;
  *) echo "usage: bash run.sh main|val|test|bench [args...]" >&2; exit 2 ;;
esac
