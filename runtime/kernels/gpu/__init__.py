"""CUDA kernels of ndd's GPU backend: ``.cu`` sources (one per kernel family), their NVRTC
compilation (:mod:`.compile`), their host-C++ build for the offline tests (:mod:`.hostbuild`),
and the launchers registered as ``(op, "gpu")`` kernels (listed in :mod:`.catalog`).
Importing this package imports nothing; nothing here touches CUDA before a launch."""
