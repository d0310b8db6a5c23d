#!/usr/bin/env bash
# The one prepared command of a session lent a GPU (issue 15, benchmarks/gpu_check.py).
#
# Here, once (downloads the wheels the device lacks into .whl/, ignored by git; ~31 MB):
#     bash benchmarks/gpu_check_device.sh --fetch
# Then with the device tool, from the repo root:
#     run(command="bash benchmarks/gpu_check_device.sh", carry=[".whl"], timeout_s=480)
# Extra arguments go to gpu_check.py (e.g. --steps environment,compile,kernels_exact,decode).
#
# What the device lacks and ndd needs: lmdb (``import ndd``: the Caffe/LMDB readers), lz4 (the
# CPU kernel catalogue: decoders.inflate), nvImageCodec for CUDA 13 and the nvJPEG library it
# loads (the GPU decode; without them ndd decodes on the CPU and the decode step fails).
set -u -o pipefail
WHEELS="nvidia-nvimgcodec-cu13==0.9.0.20 nvidia-nvjpeg==13.2.3.58 lmdb==3.0.0 lz4==4.4.5"

if [ "${1:-}" = "--fetch" ]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
    mkdir -p .whl
    PY="${PYTHON:-.venv/bin/python}"
    # shellcheck disable=SC2086
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .whl $WHEELS || exit 1
    ls -la .whl
    exit 0
fi

OUT="${OUT:-gpu_check_out}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "wheel install failed (run --fetch here first)"; exit 3; }
export PYTHONPATH=/tmp/site
export LD_LIBRARY_PATH="/tmp/site/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    python3 - <<'EOF' 2>&1
from nvidia import nvimgcodec as nv
print("nvimgcodec", nv.__version__, "cuda", getattr(nv, "__cuda_version__", "?"))
d = nv.Decoder(device_id=0, backends=[nv.Backend(nv.BackendKind.GPU_ONLY)])
print("GPU decoder created:", d is not None)
EOF
} > "$OUT/device_probe.txt"
cat "$OUT/device_probe.txt"
# the whole check keeps to --budget seconds (the tool's command limit is 600)
timeout 420 python3 benchmarks/gpu_check.py --out "$OUT" --budget 330 "$@"
rc=$?
tail -n 60 "$OUT/gpu_check.log" 2>/dev/null | grep -E "PASS|FAIL|SKIP|DIFFERS|img/s|done" | tail -n 40
exit $rc
