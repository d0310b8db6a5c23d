"""The GPU runtime: the device interface, stream-ordered memory, the plan runner on CUDA streams,
CUDA-graph capture/replay, host <-> device moves.

Nothing here imports cupy at module import time: :mod:`runtime.gpu.cupy_api` imports it when a
GPU is first asked for (``runtime.device.gpu_api``), and the tests run every module here on the
fake layer (:mod:`runtime.gpu.fake`), which needs only numpy.
"""
