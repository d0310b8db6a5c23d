"""CPU kernels: one module per op or small family (listed in :mod:`.catalog`, which imports
them all so that each registers its kernels), plus the pieces they share (tap tables, the
fused chain's stages, the numba-compiled loops of :mod:`.jit`).  Nothing is imported here:
``from runtime.kernels.cpu.cast import cast`` stays light."""
