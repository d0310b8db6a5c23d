"""runtime/readers/webdataset.py: keys and extensions, tar listing, index files, outputs."""
import io
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from runtime.readers.webdataset import WebdatasetReaderCore, read_wds_index, scan_tar, \
    split_name


def _tar(path, members):
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            if data is None:
                ti = tarfile.TarInfo(name)
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
                continue
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))


MEMBERS = [("s/a.jpg", b"AJPG"), ("s/a.cls", b"\x01\0\0\0"), ("s/b.png", b"BPNG!"),
           ("s/b.cls", b"\x02\0\0\0"), ("s/c.cls", b"\x03\0\0\0"), ("s/.h.jpg", b"HID"),
           ("s/d.x.jpg", b"DXJPG"), ("s/d.cls", b"\x04\0\0\0"), ("s/e.JPG", b"EJPG"),
           ("s/e.cls", b"\x05\0\0\0"), ("s/f.jpg", b"F1"), ("s/f.png", b"F2"),
           ("s/f.cls", b"\x06\0\0\0"), ("s/dir.jpg", None), ("s/a.txt", b"again")]


def test_split_name():
    assert split_name("s/d.x.jpg") == ("s/d", "x.jpg")
    assert split_name("a.b/c.jpg") == ("a.b/c", "jpg")
    assert split_name("noext") == ("noext", "")
    assert split_name("s/.h.jpg") == ("s/", "h.jpg")


def test_scan_groups_consecutive_keys(tmp_path):
    p = str(tmp_path / "w.tar")
    _tar(p, MEMBERS)
    samples = scan_tar(p)
    assert [k for k, _ in samples] == ["s/a", "s/b", "s/c", "s/d", "s/e", "s/f", "s/a"]
    data = open(p, "rb").read()
    key, comps = samples[3]
    assert [(e, data[o:o + n]) for e, o, n in comps] == [("x.jpg", b"DXJPG"),
                                                         ("cls", b"\x04\0\0\0")]
    open(p + ".cut", "wb").write(data[:1100])     # a member, then part of a header
    with pytest.raises(ValueError, match=r"w.tar.cut.*truncated or corrupt tar member header "
                                         r"at offset 1024"):
        scan_tar(p + ".cut")
    open(p + ".cut", "wb").write(data[:3000])     # inside a member's data
    with pytest.raises(ValueError, match="w.tar.cut.*cannot be read"):
        scan_tar(p + ".cut")
    open(p, "wb").write(b"not a tar" * 100)
    with pytest.raises(ValueError, match="w.tar.*cannot be read as a tar"):
        scan_tar(p)


def _write_index(samples, path, version="v1.2"):
    with open(path, "w") as f:
        f.write(f"{version} {len(samples)}\n")
        for key, comps in samples:
            f.write(" ".join(f"{e} {o} {n}" + (f" {key}.{e}" if version == "v1.2" else "")
                             for e, o, n in comps) + "\n")


def test_index_files(tmp_path):
    p, ip = str(tmp_path / "w.tar"), str(tmp_path / "w.idx")
    _tar(p, MEMBERS)
    samples = scan_tar(p)
    _write_index(samples, ip)
    assert read_wds_index(ip, p) == samples
    _write_index(samples, ip, "v1.1")
    assert [c for _, c in read_wds_index(ip, p)] == [c for _, c in samples]
    lines = open(ip).read().split("\n")
    open(ip, "w").write("\n".join([lines[0], lines[1].replace(" 4 ", " 99999 ", 1)] + lines[2:]))
    with pytest.raises(ValueError, match=r"w.idx' line 2 does not match .*w.tar"):
        read_wds_index(ip, p)
    open(ip, "w").write("v1.2 3\n")
    with pytest.raises(ValueError, match="announces 3 samples but lists 0"):
        read_wds_index(ip, p)
    open(ip, "w").write("v9 1\n")
    with pytest.raises(ValueError, match="first line 'v1.2"):
        read_wds_index(ip, p)


@pytest.mark.oracle
@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar")
def test_index_of_dalis_wds2idx(tmp_path):
    tool = os.path.join(sys.prefix, "bin", "wds2idx")
    if not os.path.exists(tool):
        pytest.skip("DALI's wds2idx absent")
    p, ip = str(tmp_path / "w.tar"), str(tmp_path / "w.idx")
    _tar(p, MEMBERS)
    subprocess.run([tool, p, ip], check=True, capture_output=True)
    assert read_wds_index(ip, p) == scan_tar(p)


def _core(p, **kw):
    return WebdatasetReaderCore(paths=p, **kw)


def _epoch(core):
    return [tuple(x.tobytes() if x.dtype == np.uint8 else x.tolist() for x in s)
            for s in core.next_epoch()]


def test_outputs_and_behaviors(tmp_path):
    p = str(tmp_path / "w.tar")
    _tar(p, MEMBERS)
    cls1 = [b"\x01\0\0\0", b"\x02\0\0\0", b"\x03\0\0\0", b"\x04\0\0\0", b"\x05\0\0\0",
            b"\x06\0\0\0", b""]
    got = _epoch(_core(p, ext=["jpg;png", "cls"]))
    assert got == list(zip([b"AJPG", b"BPNG!", b"", b"", b"", b"F1", b""], cls1))
    got = _epoch(_core(p, ext=["png;jpg", "cls"], missing_component_behavior="skip"))
    assert got == [(b"AJPG", cls1[0]), (b"BPNG!", cls1[1]), (b"F1", cls1[5])]  # first in tar
    got = _epoch(_core(p, ext=["jpg", "cls"], case_sensitive_extensions=False,
                       missing_component_behavior="skip"))
    assert got == [(b"AJPG", cls1[0]), (b"EJPG", cls1[4]), (b"F1", cls1[5])]
    got = _epoch(_core(p, ext=["x.jpg;txt", "cls"], dtypes=["uint8", "int32"]))
    assert got == [(b"", [1]), (b"", [2]), (b"", [3]), (b"DXJPG", [4]), (b"", [5]),
                   (b"", [6]), (b"again", [])]
    with pytest.raises(RuntimeError, match=r'Underful sample detected at tar file at ".*w.tar"'
                                           r": sample 's/c'"):
        _core(p, ext=["jpg;png", "cls"], missing_component_behavior="error")
    with pytest.raises(RuntimeError, match=r"'png' of .*s/b.* 5 bytes, not a multiple"):
        list(_core(p, ext=["png"], dtypes=["int16"],
                   missing_component_behavior="skip").next_epoch())
    with pytest.raises(ValueError, match="2 dtype"):
        _core(p, ext=["jpg"], dtypes=["uint8", "uint8"])
    with pytest.raises(ValueError, match="missing_component_behavior"):
        _core(p, ext=["jpg"], missing_component_behavior="drop")
