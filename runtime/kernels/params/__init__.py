"""Device-neutral argument logic of the kernels.

What a kernel derives from an op's arguments before it touches a pixel is the same on every
device: the layout a sample without one has (:mod:`.layouts`), crop windows and the
out-of-bounds policy (:mod:`.windows`), the random windows of ``random_resized_crop`` and the
random-crop decoder (:mod:`.windows`, seeded by :mod:`.seeds`), slice windows
(:mod:`.slices`), the output size and source window of ``resize`` (:mod:`.resize_geometry`),
filter names (:mod:`.interp`) and the folded normalization of ``crop_mirror_normalize``
(:mod:`.normalize`).  Each is written once, here, and used by the CPU kernels
(``runtime/kernels/cpu/``) and by any other device's.

Pure Python and numpy scalars: no torch, no device code, no shared mutable state.
"""
