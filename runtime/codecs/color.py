"""Colour-space and sample-type conversions applied after decoding.

All functions are vectorised numpy code and thread-safe (no shared state).
"""

import numpy as np

__all__ = ["rgb_to_ycbcr", "rgb_to_gray", "convert_depth", "OUTPUT_DTYPES"]

#: Output sample types supported by :func:`convert_depth` (DALI's decoder ``dtype`` argument).
OUTPUT_DTYPES = ("uint8", "uint16", "float32")

# Studio-range ITU-R BT.601 (Y in 16..235, Cb/Cr in 16..240): the full-range BT.601 matrix
# (Kr = 0.299, Kb = 0.114) scaled by 219/255 (luma) and 224/255 (chroma), evaluated in float32.
# This form reproduces DALI 2.4's YCbCr output bit-exactly, including its rounding ties.
_YCBCR = (np.array([[0.299, 0.587, 0.114],
                    [-0.168736, -0.331264, 0.5],
                    [0.5, -0.418688, -0.081312]])
          * np.array([[219.0 / 255.0], [224.0 / 255.0], [224.0 / 255.0]])).astype(np.float32)
_YCBCR_OFFSET = np.array([16.0, 128.0, 128.0], dtype=np.float32)


def rgb_to_ycbcr(rgb):
    """Convert RGB to 8-bit studio-range BT.601 YCbCr.

    Parameters
    ----------
    rgb : numpy.ndarray
        uint8 or uint16 array, layout HWC with C = 3 (R, G, B). 16-bit samples are scaled to
        the 8-bit range (``v / 257``) in floating point, rounding only once at the end (as
        DALI 2.4 does for 16-bit PNG).

    Returns
    -------
    numpy.ndarray
        uint8 array, same shape, channels (Y, Cb, Cr); each value rounded half up.
        Matches DALI 2.4's ``output_type=YCbCr`` exactly on the images tested.
    """
    x = rgb.astype(np.float32)
    if rgb.dtype == np.uint16:
        x /= np.float32(257.0)
    ycc = x @ _YCBCR.T + _YCBCR_OFFSET
    return np.clip(np.floor(ycc + np.float32(0.5)), 0, 255).astype(np.uint8)


def rgb_to_gray(rgb):
    """Convert RGB to full-range luma ``0.299 R + 0.587 G + 0.114 B``, rounded half up.

    Parameters
    ----------
    rgb : numpy.ndarray
        uint8 or uint16 array, layout HWC with C = 3.

    Returns
    -------
    numpy.ndarray
        Same dtype as ``rgb``, layout HWC with C = 1.
    """
    info = np.iinfo(rgb.dtype)
    y = rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    y = np.clip(np.floor(y + 0.5), 0, info.max).astype(rgb.dtype)
    return y[..., None]


def convert_depth(img, dtype):
    """Convert decoded samples to ``dtype``, rescaling to that type's dynamic range.

    Semantics of DALI's decoder ``dtype`` argument ("values will be converted to the dynamic
    range of the requested type"), checked against DALI 2.4: uint8 -> uint16 is ``v * 257``,
    uint8 -> float32 is ``v * float32(1 / 255)`` (bit for bit; not ``v / 255``), uint16 -> uint8
    is ``round(v / 257)`` (not ``v >> 8``), uint16 -> float32 is ``v * float32(1 / 65535)``.

    Parameters
    ----------
    img : numpy.ndarray
        uint8 or uint16 array (any shape).
    dtype : str
        One of :data:`OUTPUT_DTYPES`.

    Returns
    -------
    numpy.ndarray
        C-contiguous array of the requested dtype; ``img`` itself when nothing changes.
    """
    src = img.dtype
    if dtype == "uint8":
        if src == np.uint8:
            return img
        # round(v / 257) for integer v equals (v + 128) // 257 (no ties are possible).
        return ((img.astype(np.uint32) + 128) // 257).astype(np.uint8)
    if dtype == "uint16":
        if src == np.uint16:
            return img
        return img.astype(np.uint16) * np.uint16(257)
    # DALI multiplies by the float32 reciprocal (v * (1/255)), which differs from v / 255 in
    # the last bit for about half of the values
    inv = np.float32(1.0 / (255.0 if src == np.uint8 else 65535.0))
    return img.astype(np.float32) * inv
