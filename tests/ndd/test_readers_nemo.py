"""readers.NemoAsr (ndd/_readers_nemo.py, runtime/readers/nemo_asr.py) on small manifests of
WAV/FLAC files written here, and against DALI 2.4's reader (oracle)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ndd

sf = pytest.importorskip("soundfile")
RNG = np.random.default_rng(5)
LENGTHS = (8000, 12000, 4000, 20000, 6000)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("nemo")
    pcm, lines = [], []
    for i, n in enumerate(LENGTHS):
        x = (RNG.standard_normal((n, 2 if i == 1 else 1)) * 3000).astype(np.int16)
        path = root / f"a{i}.{'flac' if i == 3 else 'wav'}"
        sf.write(path, x, 16000, subtype="PCM_16")
        pcm.append(x)
        entry = {"audio_filepath": str(path), "duration": n / 16000}
        if i != 4:
            entry["text"] = f"utterance {i} ü"
        lines.append(entry)
    manifest = root / "manifest.json"
    manifest.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    return root, manifest, pcm


def _epoch(reader, batch_size=2):
    return [[[np.asarray(t) for t in o.evaluate().tensors] for o in outs]
            for outs in reader.next_epoch(batch_size=batch_size)]


def test_outputs_follow_the_manifest(corpus):
    _, manifest, pcm = corpus
    r = ndd.readers.NemoAsr(manifest_filepaths=str(manifest), read_idxs=True)
    batches = _epoch(r)
    audio = [a for b in batches for a in b[0]]
    rates = [float(s) for b in batches for s in b[1]]
    texts = [bytes(t).decode() for b in batches for t in b[2]]
    idxs = [int(i[0]) for b in batches for i in b[3]]
    assert len(audio) == 5 and idxs == [0, 1, 2, 3, 4] and rates == [16000.0] * 5
    assert texts == [f"utterance {i} ü" for i in range(4)] + [""]
    for a, x in zip(audio, pcm):            # downmix (default): mean of the channels
        want = (x.astype(np.float64) / 32768).mean(axis=1)
        assert a.dtype == np.float32 and a.shape == (x.shape[0],)
        np.testing.assert_allclose(a, want, rtol=0, atol=1e-7)
    assert batches[1][3][0].dtype == np.int64 and batches[1][3][0].shape == (1,)


def test_duration_filters_and_renumbering(corpus):
    _, manifest, _ = corpus
    short = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], max_duration=0.6,
                                read_idxs=True, read_text=False, read_sample_rate=False)
    got = _epoch(short, 10)
    assert [a.shape[0] for a in got[0][0]] == [8000, 4000, 6000]    # 0.5, 0.25, 0.375 s
    assert [int(i[0]) for i in got[0][1]] == [0, 1, 2]               # counted after the filter
    long = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], min_duration=0.6,
                               read_text=False, read_sample_rate=False)
    assert [a.shape[0] for a in _epoch(long, 10)[0][0]] == [12000, 20000]


def test_no_downmix_int16_and_resampling(corpus):
    _, manifest, pcm = corpus
    r = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], downmix=False,
                            dtype=ndd.int16, read_text=False, read_sample_rate=False)
    audio = [a for b in _epoch(r) for a in b[0]]
    for a, x in zip(audio, pcm):
        np.testing.assert_array_equal(a, x)
    r8 = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], sample_rate=8000.0,
                             read_text=False)
    first = _epoch(r8)[0]
    assert first[0][0].shape == (4000,) and float(first[1][0]) == 8000.0


def test_shards_cover_the_dataset_once(corpus):
    _, manifest, _ = corpus
    seen = []
    for shard in range(2):
        r = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], num_shards=2,
                                shard_id=shard, read_idxs=True, random_shuffle=True, seed=3)
        seen += [int(i[0]) for b in _epoch(r) for i in b[3]]
    assert sorted(seen) == [0, 1, 2, 3, 4]


def test_bad_manifests_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"audio_filepath": "x.wav"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.json.*line 2"):
        ndd.readers.NemoAsr(manifest_filepaths=[str(bad)])
    bad.write_text('{"duration": 1.0}\n')
    with pytest.raises(ValueError, match=r"line 1.*audio_filepath"):
        ndd.readers.NemoAsr(manifest_filepaths=[str(bad)])
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"audio_filepath": str(tmp_path / "nope.wav")}) + "\n")
    r = ndd.readers.NemoAsr(manifest_filepaths=[str(missing)])
    with pytest.raises(RuntimeError, match="nope.wav"):
        _epoch(r)
    with pytest.raises(TypeError, match="unexpected argument"):
        ndd.readers.NemoAsr(manifest_filepaths=[str(bad)], sample_rat=8000)


def test_compile_mode_and_state(corpus):
    _, manifest, _ = corpus

    def body(audio):
        return ndd.preemphasis_filter(audio)
    ref = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], read_text=False,
                              read_sample_rate=False, random_shuffle=True, seed=1)
    eager = [np.asarray(t) for (a,) in ref.next_epoch(batch_size=2)
             for t in body(a).evaluate().tensors]
    r = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], read_text=False,
                            read_sample_rate=False, random_shuffle=True, seed=1)
    with ndd.EvalMode.deferred:
        got = [np.asarray(t) for (a,) in r.next_epoch(batch_size=2, compile=True)
               for t in body(a).evaluate().tensors]
    assert len(got) == len(eager) == 5
    for x, y in zip(got, eager):
        np.testing.assert_array_equal(x, y)
    state = r.get_state()
    again = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], read_text=False,
                                read_sample_rate=False, random_shuffle=True, seed=1)
    again.set_state(state)
    assert len(_epoch(again)) == 3


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(read_idxs=True), dict(max_duration=0.6),
                                dict(downmix=False, read_text=False),
                                dict(dtype="int16", read_sample_rate=False)])
def test_matches_dali(corpus, kw):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    _, manifest, _ = corpus
    kd, kn = dict(kw), dict(kw)
    if "dtype" in kw:
        kd["dtype"], kn["dtype"] = dali.int16, ndd.int16
    a = _epoch(dali.readers.NemoAsr(manifest_filepaths=[str(manifest)], **kd))
    b = _epoch(ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], **kn))
    assert len(a) == len(b)
    for ba, bb in zip(a, b):
        for outs_a, outs_b in zip(ba, bb):
            # DALI fills its last batch from the next epoch; ndd's is short (docs/semantics.md)
            for x, y in zip(outs_a, outs_b):
                assert x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_array_equal(x, y)


def test_decoding_follows_a_change_of_thread_count(corpus):
    # the reader's decoding threads are re-made when the thread count changes, also from one
    # thread (where it had none of its own) to several and back; outputs stay the same
    _, manifest, pcm = corpus
    before = ndd.get_num_threads()
    try:
        results = []
        for n in (1, 2, 1, 3):
            ndd.set_num_threads(n)
            r = ndd.readers.NemoAsr(manifest_filepaths=str(manifest))
            results.append([a for b in _epoch(r) for a in b[0]])
    finally:
        ndd.set_num_threads(before)
    for audio in results:
        assert len(audio) == len(pcm)
        for got, want in zip(audio, pcm):
            expect = want.mean(axis=1, dtype=np.float64) / 32768 if want.shape[1] > 1 else \
                want[:, 0] / 32768
            np.testing.assert_allclose(got.reshape(-1), expect, atol=1e-4)


def test_decode_pool_shares_and_a_compiled_epoch_decodes_on_all_the_threads(corpus):
    # decode_pool(share): that share of the op threads (at least one); the reader decodes on
    # all of them, in compile mode too (the same outputs)
    from runtime.readers.nemo_asr import decode_pool
    _, manifest, _ = corpus
    before = ndd.get_num_threads()
    try:
        for n, half in ((1, 1), (2, 1), (4, 2), (5, 2)):
            ndd.set_num_threads(n)
            assert decode_pool(0.5).num_threads == half
            assert decode_pool().num_threads == n
        ndd.set_num_threads(4)
        r = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], read_text=False,
                                read_sample_rate=False)
        plain = [np.asarray(t) for (a,) in r.next_epoch(batch_size=2)
                 for t in a.evaluate().tensors]
        assert r._core.decode_share == 1.0
        r = ndd.readers.NemoAsr(manifest_filepaths=[str(manifest)], read_text=False,
                                read_sample_rate=False)
        with ndd.EvalMode.deferred:
            compiled = [np.asarray(t) for (a,) in r.next_epoch(batch_size=2, compile=True)
                        for t in ndd.preemphasis_filter(a, preemph_coeff=0.0).evaluate().tensors]
        assert r._core.decode_share == 1.0
        assert len(compiled) == len(plain) == len(LENGTHS)
        for x, y in zip(compiled, plain):
            np.testing.assert_array_equal(x, y)
    finally:
        ndd.set_num_threads(before)
