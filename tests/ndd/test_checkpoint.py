"""Checkpoints restore readers and RNGs exactly where they were.

The reference of every restore is the uninterrupted run of the same reader / RNG: the samples
and random numbers after a restore must equal those the original object goes on to produce.
"""
import io
import json
import os
import pickle
import shutil

import numpy as np
import pytest

import ndd


@pytest.fixture()
def folder(tmp_path):
    """Two classes a/, b/ of five files each; every file's bytes are unique."""
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for k in range(5):
            (tmp_path / c / f"{k}.jpg").write_bytes(bytes([ord(c), k]) * 3)
    return str(tmp_path)


def _contents(batch):
    return [bytes(np.asarray(t)) for t in batch]


def _epoch(reader, bs=3):
    return [_contents(j) for j, _ in reader.next_epoch(batch_size=bs)]


def _uniform(rng, n=4):
    return np.asarray(ndd.as_tensor(ndd.random.uniform(batch_size=n, rng=rng)))


def test_reader_and_rng_resume_exactly(folder, tmp_path):
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3,
                              enable_checkpointing=True)
    rng = ndd.random.RNG(seed=9)
    ck = ndd.checkpoint.Checkpoint()
    assert ck.register(reader, "reader") == "reader"
    assert ck.register(rng, "rng") == "rng"
    it = reader.next_epoch(batch_size=3)
    next(it)
    ndd.random.uniform(batch_size=2, rng=rng).evaluate()
    ck.collect()
    path = ck.save(str(tmp_path / "ckpt_{seq:04d}.json"))
    assert path.endswith("ckpt_0000.json")
    expected_rest = [_contents(j) for j, _ in it]
    expected_rand = _uniform(rng)

    reader2 = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3,
                               enable_checkpointing=True)
    rng2 = ndd.random.RNG()
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.load(str(tmp_path / "ckpt_{seq:04d}.json"))
    ck2.register(reader2, "reader")
    ck2.register(rng2, "rng")
    got_rest = [_contents(j) for j, _ in reader2.next_epoch(batch_size=3)]
    assert got_rest == expected_rest
    np.testing.assert_array_equal(_uniform(rng2), expected_rand)


def test_register_errors(folder, tmp_path):
    reader = ndd.readers.File(file_root=folder)
    for _ in reader.next_epoch(batch_size=10):
        pass
    with pytest.raises(RuntimeError, match="enable_checkpointing"):
        ndd.checkpoint.Checkpoint().register(reader, "r")
    ck = ndd.checkpoint.Checkpoint()
    ck.register(ndd.random.RNG(1), "rng")
    ck.save(str(tmp_path / "c_{seq}.json"))
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.load(str(tmp_path / "c_{seq}.json"))
    with pytest.raises(KeyError, match="other"):
        ck2.register(ndd.random.RNG(), "other")
    with pytest.raises(FileNotFoundError):
        ndd.checkpoint.Checkpoint().load(str(tmp_path / "none_{seq}.json"))
    assert ndd.checkpoint.current() is ndd.checkpoint.current()
    with pytest.raises(TypeError, match="no state"):
        ndd.checkpoint.Checkpoint().register(ndd.ExternalSource([1]), "src")


# -- the state value survives the user's own checkpoint system -------------------------------
def _through_str(state, tmp_path):
    return str(state)


def _through_json(state, tmp_path):
    return json.loads(json.dumps({"s": state}))["s"]


def _through_pickle(state, tmp_path):
    return pickle.loads(pickle.dumps(state))


def _through_torch(state, tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "state.pt"
    torch.save({"reader_or_rng": state, "step": 7}, path)
    return torch.load(path)["reader_or_rng"]    # torch's default: weights_only=True


def _through_torch_weights_only(state, tmp_path):
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save([state], buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)[0]


def _through_bytes(state, tmp_path):
    (tmp_path / "state.txt").write_text(state)
    return (tmp_path / "state.txt").read_bytes()


@pytest.mark.parametrize("trip", [_through_str, _through_json, _through_pickle, _through_torch,
                                  _through_torch_weights_only, _through_bytes])
def test_state_survives_serializers_and_restores_fresh_objects(folder, tmp_path, trip):
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=5)
    rng = ndd.random.RNG(seed=21)
    it = reader.next_epoch(batch_size=3)
    next(it)
    _uniform(rng)
    rs, gs = reader.get_state(), rng.get_state()
    assert type(rs) is str and type(gs) is str and rs.isascii() and gs.isascii()
    assert str(rs) == rs and repr(rs) == repr(str(rs))
    want_rest, want_next = [_contents(j) for j, _ in it], _epoch(reader)
    want_rand = _uniform(rng)

    back_r, back_g = trip(rs, tmp_path), trip(gs, tmp_path)
    fresh = ndd.readers.File(file_root=folder, random_shuffle=True, seed=5)
    fresh.set_state(back_r)
    assert _epoch(fresh) == want_rest     # the rest of the saved epoch...
    assert _epoch(fresh) == want_next     # ...then the next epoch, whole
    g2 = ndd.random.RNG(seed=0)
    g2.set_state(back_g)
    np.testing.assert_array_equal(_uniform(g2), want_rand)
    np.testing.assert_array_equal(_uniform(ndd.random.RNG(state=back_g)), want_rand)


# -- where a restored reader continues -------------------------------------------------------
READER_KINDS = [dict(), dict(random_shuffle=True, seed=3), dict(random_shuffle=True),
                dict(num_shards=3, shard_id=1), dict(num_shards=3, shard_id=2, pad_last_batch=True),
                dict(num_shards=2, shard_id=1, stick_to_shard=True, random_shuffle=True, seed=1),
                dict(shuffle_after_epoch=True, num_shards=2)]


@pytest.mark.parametrize("kw", READER_KINDS)
def test_restore_at_every_batch_and_epoch_boundary(folder, kw):
    """A state taken after any batch (mid-epoch, after an epoch's last batch, in a later
    epoch) restores into a fresh reader that yields exactly what the saved reader went on to
    yield: the rest of that epoch, then whole epochs."""
    ref = ndd.readers.File(file_root=folder, enable_checkpointing=True, **kw)
    states, epochs = [], []
    for _ in range(3):
        ep = []
        for j, _ in ref.next_epoch(batch_size=3):
            ep.append(_contents(j))
            states.append((len(epochs), len(ep), ref.get_state()))
        epochs.append(ep)
    build = {**kw, "seed": 77} if "seed" in kw else kw   # the state's seed wins
    for e, b, state in states:
        fresh = ndd.readers.File(file_root=folder, **build)
        fresh.set_state(state)
        if b == len(epochs[e]):     # taken at the epoch boundary: the next epoch is whole
            want = epochs[e + 1:]
        else:
            want = [epochs[e][b:]] + epochs[e + 1:]
        got = [_epoch(fresh) for _ in want]
        assert got == want, (e, b, state)


def test_second_restore_from_the_same_state(folder):
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=8)
    it = ref.next_epoch(batch_size=4)
    next(it)
    state = ref.get_state()
    want = [[_contents(j) for j, _ in it], _epoch(ref, 4)]
    for _ in range(2):
        fresh = ndd.readers.File(file_root=folder, random_shuffle=True, seed=8)
        fresh.set_state(state)
        fresh.set_state(state)      # setting twice before iterating is fine
        assert fresh.get_state() == state
        assert [_epoch(fresh, 4), _epoch(fresh, 4)] == want
    with pytest.raises(RuntimeError, match="after iteration has begun"):
        fresh.set_state(state)


def test_sample_mode_state(folder):
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=4)
    it = ref.next_epoch()
    for _ in range(4):
        next(it)
    state = ref.get_state()
    want = [bytes(np.asarray(e)) for e, _ in it]
    fresh = ndd.readers.File(file_root=folder, random_shuffle=True, seed=4)
    fresh.set_state(state)
    assert [bytes(np.asarray(e)) for e, _ in fresh.next_epoch()] == want


def test_restore_into_a_moved_copy_of_the_dataset(folder, tmp_path):
    """The state names the dataset by its paths below their common folder, so a copy in
    another place restores (a checkpoint taken on one machine resumes on another)."""
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=2)
    it = ref.next_epoch(batch_size=3)
    next(it)
    state = ref.get_state()
    rest = [_contents(j) for j, _ in it]
    moved = shutil.copytree(folder, str(tmp_path / "elsewhere" / "data"))
    fresh = ndd.readers.File(file_root=moved, random_shuffle=True, seed=2)
    fresh.set_state(state)
    assert _epoch(fresh) == rest
    files = [os.path.join(moved, c, f"{k}.jpg") for c in "ab" for k in range(5)]
    by_list = ndd.readers.File(files=files, labels=[0] * 5 + [1] * 5, random_shuffle=True)
    by_list.set_state(state)    # the same files and labels, listed explicitly
    assert _epoch(by_list) == rest


def test_compiled_reader_state_counts_the_batches_the_body_got(folder):
    """compile=True reads batches ahead; get_state inside the body counts only those the body
    got, and the state restores into a compiled loop too."""
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=6)
    got, states = [], []
    for j, lab in reader.next_epoch(batch_size=2, compile=True):
        (lab + 1).evaluate()
        got.append(_contents(j))
        states.append(reader.get_state())
    assert [s.split(";")[1:3] for s in states] == \
        [["epoch=0", f"position={2 * k}"] for k in range(1, 5)] + [["epoch=1", "position=0"]]
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=6)
    assert _epoch(ref, 2) == got
    nxt = _epoch(ref, 2)
    fresh = ndd.readers.File(file_root=folder, random_shuffle=True, seed=6)
    fresh.set_state(states[1])
    rest = []
    for j, lab in fresh.next_epoch(batch_size=2, compile=True):
        (lab + 1).evaluate()
        rest.append(_contents(j))
    assert rest == got[2:]
    fresh = ndd.readers.File(file_root=folder, random_shuffle=True, seed=6)
    fresh.set_state(states[-1])
    assert _epoch(fresh, 2) == nxt


# -- bad states ------------------------------------------------------------------------------
def test_bad_reader_states(folder, tmp_path):
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3)
    it = ref.next_epoch(batch_size=3)
    next(it)
    state = ref.get_state()

    def fresh(**kw):
        return ndd.readers.File(file_root=kw.pop("root", folder),
                                **{"random_shuffle": True, "seed": 3, **kw})

    for bad in (42, None, 1.5, ["x"]):
        with pytest.raises(TypeError, match="state must be a str"):
            fresh().set_state(bad)
    with pytest.raises(ValueError, match="checksum mismatch"):
        fresh().set_state(state[:-12])                      # truncated
    with pytest.raises(ValueError, match="checksum mismatch"):
        fresh().set_state(state.replace("position=3", "position=6"))    # altered
    with pytest.raises(ValueError, match="expected an ndd.readers.File state.*an "
                                         "ndd.random.RNG state"):
        fresh().set_state(ndd.random.RNG(1).get_state())
    with pytest.raises(ValueError, match="DALI RNG state"):
        fresh().set_state("Philox_00000000000004D2_0000000000000000:0000000000000000_0")
    with pytest.raises(ValueError, match="looks like a DALI reader state"):
        fresh().set_state("Cg8KCTUzNzQxMzE4MhAAGAQ=")
    with pytest.raises(ValueError, match="version '9' state"):
        fresh().set_state(state.replace("File/2;", "File/9;"))
    with pytest.raises(ValueError, match="empty string"):
        fresh().set_state("")
    with pytest.raises(ValueError, match="num_shards: state has 1, reader has 2"):
        fresh(num_shards=2).set_state(state)
    with pytest.raises(ValueError, match="random_shuffle: state has True, reader has False"):
        fresh(random_shuffle=False).set_state(state)
    other = tmp_path / "other"      # the same count and layout, other names
    for c in ("a", "b"):
        (other / c).mkdir(parents=True)
        for k in range(5):
            (other / c / f"x{k}.jpg").write_bytes(b"z")
    with pytest.raises(ValueError, match="different dataset: its file list"):
        fresh(root=str(other)).set_state(state)
    files = [os.path.join(folder, c, f"{k}.jpg") for c in "ab" for k in range(5)]
    with pytest.raises(ValueError, match="different dataset"):     # other labels
        ndd.readers.File(files=files, random_shuffle=True).set_state(state)
    with pytest.raises(ValueError, match="different dataset"):     # other order
        ndd.readers.File(files=files[::-1], labels=[1] * 5 + [0] * 5,
                         random_shuffle=True).set_state(state)
    with pytest.raises(ValueError, match="ndd.readers.File state"):
        fresh().set_state({"type": "ndd.random.RNG"})


def test_bad_rng_states(folder):
    state = ndd.random.RNG(3).get_state()
    with pytest.raises(TypeError, match="state must be a str"):
        ndd.random.RNG(1).set_state(42)
    with pytest.raises(ValueError, match="checksum mismatch"):
        ndd.random.RNG(1).set_state(state[:-3])
    reader = ndd.readers.File(file_root=folder)
    with pytest.raises(ValueError, match="expected an ndd.random.RNG state.*an "
                                         "ndd.readers.File state"):
        ndd.random.RNG(1).set_state(reader.get_state())
    with pytest.raises(ValueError, match="DALI RNG state"):
        ndd.random.RNG(1).set_state("Philox_00000000000004D2_0000000000000000:0000000000000000_0")
    with pytest.raises(ValueError, match="Cannot specify both `seed` and `state`"):
        ndd.random.RNG(seed=1, state=state)
    g = ndd.random.RNG(5)
    before = g.get_state()
    with pytest.raises(ValueError):
        g.set_state(state.replace("seed=3", "seed=4"))
    assert g.get_state() == before      # a rejected state leaves the generator alone


# -- the formats stay readable ---------------------------------------------------------------
# Hand-written blobs of the CURRENT formats (state strings version 2, checkpoint files
# version 2) and of ndd's earlier format 1 (dict states in {"version": 1, "objects": ...}).
# They must keep loading, and keep meaning the same position, in every later ndd version that
# claims these versions: a change that breaks old files fails here.
#
# The reader: the `folder` fixture (a/0..4.jpg labelled 0, b/0..4.jpg labelled 1; the
# dataset fingerprint 63ca16c953d7e39e covers those relative names and labels), built with
# random_shuffle=True, seed=3, batch_size=3, saved after epoch 0 and the first batch of
# epoch 1 (epoch=1, position=3). The RNG: RNG(seed=11) after uniform(batch_size=3).
READER_STATE_V2 = (
    "ndd.readers.File/2;epoch=1;position=3;mode=batch;batch_size=3;num_samples=10;"
    "num_shards=1;shard_id=0;stick_to_shard=0;pad_last_batch=0;random_shuffle=1;seed=3;"
    "shuffle_after_epoch=0;shuffle_after_epoch_seed=0;dataset=63ca16c953d7e39e;crc=c15b6773")
RNG_STATE_V2 = (
    "ndd.random.RNG/2;bit_generator=PCG64;state=125184064058719751067126464258145894283;"
    "inc=7937318808080196428804369945471644491;has_uint32=0;uinteger=0;seed=11;crc=8152a8a5")
CHECKPOINT_V2 = json.dumps({"version": 2, "states": {
    "reader": {"state": READER_STATE_V2, "type": "File"},
    "rng": {"state": RNG_STATE_V2, "type": "RNG"}}})
READER_STATE_V1 = {"type": "ndd.readers.File", "core": {
    "format": "ndd.readers.File/1", "epoch": 1, "position": 3, "seed": 3,
    "shuffle_after_epoch_seed": 0, "mode": "batch", "batch_size": 3, "num_samples": 10,
    "num_shards": 1, "shard_id": 0, "stick_to_shard": False, "pad_last_batch": False,
    "random_shuffle": True, "shuffle_after_epoch": False}}
RNG_STATE_V1 = {"type": "ndd.random.RNG", "bit_generator": "PCG64",
                "state": {"state": 125184064058719751067126464258145894283,
                          "inc": 7937318808080196428804369945471644491},
                "has_uint32": 0, "uinteger": 0, "seed": 11}
CHECKPOINT_V1 = json.dumps({"version": 1, "objects": {
    "reader": {"kind": "File", "state": READER_STATE_V1},
    "rng": {"kind": "RNG", "state": RNG_STATE_V1}}})


def _reference(folder):
    """What the blobs' reader and RNG go on to produce (uninterrupted runs)."""
    ref = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3)
    _epoch(ref)
    it = ref.next_epoch(batch_size=3)
    next(it)
    rest = [[_contents(j) for j, _ in it], _epoch(ref)]
    g = ndd.random.RNG(seed=11)
    ndd.random.uniform(batch_size=3, rng=g).evaluate()
    return rest, _uniform(g), ref


@pytest.mark.parametrize("reader_state, rng_state", [(READER_STATE_V2, RNG_STATE_V2),
                                                     (READER_STATE_V1, RNG_STATE_V1)],
                         ids=["format2", "format1"])
def test_literal_states_restore(folder, reader_state, rng_state):
    rest, rand, _ = _reference(folder)
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3)
    reader.set_state(json.loads(json.dumps(reader_state)))
    assert [_epoch(reader), _epoch(reader)] == rest
    g = ndd.random.RNG()
    g.set_state(rng_state)
    np.testing.assert_array_equal(_uniform(g), rand)
    assert g.seed == 11


@pytest.mark.parametrize("text", [CHECKPOINT_V2, CHECKPOINT_V1], ids=["format2", "format1"])
def test_literal_checkpoint_files_load(folder, tmp_path, text):
    rest, rand, _ = _reference(folder)
    (tmp_path / "ck_0003.json").write_text(text)
    ck = ndd.checkpoint.Checkpoint()
    assert ck.load(str(tmp_path / "ck_{seq:04d}.json")).endswith("ck_0003.json")
    assert ck.is_loaded and not ck.is_complete
    reader = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3)
    g = ndd.random.RNG()
    ck.register(reader, "reader")
    ck.register(g, "rng")
    assert [_epoch(reader), _epoch(reader)] == rest
    np.testing.assert_array_equal(_uniform(g), rand)
    # saving again writes the current format, with the next free number
    ck.collect()
    path = ck.save(str(tmp_path / "ck_{seq:04d}.json"))
    assert path.endswith("ck_0004.json")
    payload = json.loads(open(path).read())
    assert payload["version"] == 2 and payload["states"]["rng"]["type"] == "RNG"
    assert all(isinstance(e["state"], str) for e in payload["states"].values())


def test_current_writer_matches_the_literal_blobs(folder):
    """Today's writer produces the literal version-2 strings above (update the blobs only
    together with the version, keeping the old ones readable)."""
    _, _, ref = _reference(folder)
    g = ndd.random.RNG(seed=11)
    ndd.random.uniform(batch_size=3, rng=g).evaluate()
    assert g.get_state() == RNG_STATE_V2
    r = ndd.readers.File(file_root=folder, random_shuffle=True, seed=3)
    _epoch(r)
    it = r.next_epoch(batch_size=3)
    next(it)
    assert r.get_state() == READER_STATE_V2
    it.close()


# -- Checkpoint API (DALI 2.4's rules and messages) ------------------------------------------
def test_checkpoint_registration_rules(folder):
    ck = ndd.checkpoint.Checkpoint()
    g1, g2 = ndd.random.RNG(1), ndd.random.RNG(2)
    assert ck.register(g1) == "__op_0"
    assert ck.register(g1) == "__op_0" and len(ck) == 1       # same object: same key
    assert ck.register(g2, "b") == "b"
    assert ck.names == ("__op_0", "b") and "b" in ck
    with pytest.raises(ValueError, match="__op_"):
        ck.register(ndd.random.RNG(), "__op_7")
    with pytest.raises(ValueError, match="empty"):
        ck.register(ndd.random.RNG(), "")
    with pytest.raises(RuntimeError, match="already been added with the key 'b'"):
        ck.register(g2, "c")
    reader = ndd.readers.File(file_root=folder)
    with pytest.raises(TypeError, match="Cannot replace operator 'b' of type 'RNG' with an "
                                        "operator of type 'File'"):
        ck.register(reader, "b")
    assert ck.get_state("b") is None
    with pytest.raises(KeyError):
        ck.get_state("nope")
    ck.collect()
    assert ck.is_complete and ck.get_state("b") == g2.get_state()
    with pytest.raises(RuntimeError, match="completed"):
        ck.register(ndd.random.RNG())
    ck.clear()
    assert len(ck) == 0 and not ck.is_complete and not ck.is_loaded
    with pytest.raises(RuntimeError, match="empty checkpoint"):
        ck.serialize()


def test_checkpoint_payload_errors(folder):
    def load(payload):
        ndd.checkpoint.Checkpoint().deserialize(json.dumps(payload))

    with pytest.raises(ValueError, match="Unsupported checkpoint format version 3"):
        load({"version": 3, "states": {}})
    with pytest.raises(ValueError, match="Unsupported checkpoint format version 1"):
        load({"version": 1, "states": {"rng": {"state": "x", "type": "RNG"}}})   # not ndd's
    with pytest.raises(ValueError, match="Invalid checkpoint entry for 'rng'"):
        load({"version": 2, "states": {"rng": "raw"}})
    with pytest.raises(ValueError, match="Invalid checkpoint entry for 'rng'"):
        load({"version": 2, "states": {"rng": {"type": "RNG"}}})
    with pytest.raises(ValueError, match="Invalid `type` for entry 'rng'"):
        load({"version": 2, "states": {"rng": {"state": "x", "type": 42}}})
    with pytest.raises(ValueError, match="Invalid checkpoint payload"):
        ndd.checkpoint.Checkpoint().deserialize("{not json")
    with pytest.raises(ValueError, match="Invalid checkpoint entry for 'r'.*format 1"):
        load({"version": 1, "objects": {"r": {"kind": "RNG", "state": "x"}}})

    ck = ndd.checkpoint.Checkpoint()
    ck.deserialize(CHECKPOINT_V2)
    with pytest.raises(TypeError, match="Type mismatch for operator 'rng': checkpoint stores "
                                        "state for type 'RNG', but the registered operator "
                                        "is of type 'File'"):
        ck.register(ndd.readers.File(file_root=folder, random_shuffle=True), "rng")
    ck = ndd.checkpoint.Checkpoint()
    ck.set_state("x", READER_STATE_V2, op_type=ndd.readers.File)
    with pytest.raises(TypeError, match="Type mismatch"):
        ck.register(ndd.random.RNG(1), "x")
    with pytest.raises(TypeError, match="op_type"):
        ck.set_state("y", "s", op_type=3)


def test_checkpoint_restore_and_anonymous_order(folder):
    a, b = ndd.random.RNG(1), ndd.random.RNG(2)
    ck = ndd.checkpoint.Checkpoint()
    ck.register(a)
    ck.register(b, "named")
    ck.collect()
    text = ck.serialize()
    want = ([a() for _ in range(3)], [b() for _ in range(3)])
    a2, b2 = ndd.random.RNG(5), ndd.random.RNG(6)
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.deserialize(text)
    ck2.register(a2)
    ck2.register(b2, "named")
    assert ([a2() for _ in range(3)], [b2() for _ in range(3)]) == want
    with pytest.raises(KeyError, match="Loaded checkpoint has no state"):
        ck2.register(ndd.random.RNG(7))
    ck3 = ndd.checkpoint.Checkpoint()
    ck3.register(ndd.random.RNG(1), "p")
    ck3.register(ndd.random.RNG(1), "q")
    ck3.set_state("p", a.get_state())
    with pytest.raises(RuntimeError, match="incomplete"):
        ck3.restore()
    ck3.set_state("q", b.get_state())
    ck3.restore()


@pytest.mark.parametrize("bad", ["ckpt.json", "ckpt_{seq}_{seq}.json", "ckpt_{n}.json"])
def test_checkpoint_pattern_needs_one_seq(tmp_path, bad):
    ck = ndd.checkpoint.Checkpoint()
    ck.register(ndd.random.RNG(1), "rng")
    with pytest.raises(ValueError, match="seq"):
        ck.save(str(tmp_path / bad))
    with pytest.raises(ValueError, match="seq"):
        ck.load(str(tmp_path / bad))


def test_checkpoint_save_never_overwrites(tmp_path):
    pattern = str(tmp_path / "sub" / "ck_{seq:03d}.json")
    paths = []
    for seed in (1, 2):
        ck = ndd.checkpoint.Checkpoint()
        ck.register(ndd.random.RNG(seed), "rng")
        ck.collect()
        paths.append(ck.save(pattern))
        paths.append(ck.save(pattern))
    assert [os.path.basename(p) for p in paths] == [f"ck_00{k}.json" for k in range(4)]
    ck = ndd.checkpoint.Checkpoint()
    assert ck.load(pattern) == paths[-1]


# -- DALI oracle -----------------------------------------------------------------------------
def _dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _labels(batch):
    return [int(np.asarray(t)[0]) for t in batch.tensors]


@pytest.mark.oracle
def test_oracle_form_of_get_state(folder):
    """DALI hands out objects whose str() is the serialized state (an ASCII string without
    blanks) and takes that string (or bytes) back; ndd hands out that string itself."""
    dalidyn = _dali()
    for lib in (dalidyn, ndd):
        reader = lib.readers.File(file_root=folder, enable_checkpointing=True)
        it = reader.next_epoch(batch_size=4)
        next(it)
        rng = lib.random.RNG(seed=3)
        saved, saved_rng = reader.get_state(), rng.get_state()
        for state in (saved, saved_rng):
            text = str(state)
            assert isinstance(text, str) and text.isascii() and text.split() == [text]
        want = [_labels(lab) for _, lab in it]
        for form in (str, lambda s: str(s).encode("ascii")):
            fresh = lib.readers.File(file_root=folder)
            fresh.set_state(form(saved))
            assert [_labels(lab) for _, lab in fresh.next_epoch(batch_size=4)][:2] == want
            g = lib.random.RNG(seed=9)
            g.set_state(form(saved_rng))
            assert g() == lib.random.RNG(seed=3)()
        with pytest.raises(TypeError):
            lib.readers.File(file_root=folder).set_state(42)
    assert isinstance(ndd.readers.File(file_root=folder).get_state(), str)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(num_shards=3, shard_id=1),
                                dict(num_shards=3, shard_id=2, stick_to_shard=True),
                                dict(num_shards=2, shard_id=1, pad_last_batch=True)])
def test_oracle_restore_at_epoch_boundary(tmp_path, kw):
    """A state taken after an epoch's last batch: the next next_epoch yields the whole next
    epoch, as the uninterrupted reader does (12 files, shard sizes divisible by the batch
    size, so DALI's and ndd's epochs are the same samples)."""
    dalidyn = _dali()
    files = []
    for k in range(12):
        p = tmp_path / f"f{k:02d}.jpg"
        p.write_bytes(bytes([k]) * 4)
        files.append(str(p))
    runs = {}
    for name, lib in (("dali", dalidyn), ("ndd", ndd)):
        def make(**extra):
            return lib.readers.File(files=files, labels=list(range(12)), **kw, **extra)

        ref = make(enable_checkpointing=True)
        epochs, states = [], []
        for _ in range(3):
            epochs.append([_labels(lab) for _, lab in ref.next_epoch(batch_size=2)])
            states.append(str(ref.get_state()))
        restored = []
        for e in (0, 1):
            fresh = make()
            fresh.set_state(states[e])
            restored.append([[_labels(lab) for _, lab in fresh.next_epoch(batch_size=2)]
                             for _ in range(2 - e)])
            assert restored[-1] == epochs[e + 1:], (name, e)
        runs[name] = epochs, restored
    assert runs["ndd"] == runs["dali"]


def _rng_before_set_seed(lib):
    """What an RNG handle obtained before set_seed draws, and what the default's state does."""
    handle = lib.random.get_default_rng()
    twin, twin2 = handle.clone(), handle.clone()
    lib.random.set_seed(42)
    same_object = handle is lib.random.get_default_rng()
    fresh = lib.random.RNG(seed=42)
    lib.random.set_seed(42)
    draws_like_fresh = [handle() for _ in range(4)] == [fresh() for _ in range(4)]
    kept = [twin() for _ in range(3)]
    clone_kept = kept == [twin2() for _ in range(3)] and \
        kept != [g() for g in [lib.random.RNG(seed=42)] for _ in range(3)]
    lib.random.set_seed(7)
    saved = lib.random.get_default_rng().get_state()
    after = [handle() for _ in range(3)]
    lib.random.set_seed(8)
    lib.random.get_default_rng().set_state(str(saved))
    restored = [handle() for _ in range(3)] == after
    lib.random.set_seed(5)
    a = np.asarray(lib.as_tensor(lib.random.uniform(batch_size=3)))
    lib.random.set_seed(5)
    b = np.asarray(lib.as_tensor(lib.random.uniform(batch_size=3, rng=handle)))
    return dict(same_object=same_object, draws_like_fresh=draws_like_fresh,
                clone_kept=clone_kept, restored=restored, op_same=bool(np.array_equal(a, b)))


@pytest.mark.oracle
def test_oracle_rng_handles_obtained_before_set_seed():
    dalidyn = _dali()
    want = _rng_before_set_seed(dalidyn)
    assert want == dict(same_object=True, draws_like_fresh=True, clone_kept=True,
                        restored=True, op_same=True)
    assert _rng_before_set_seed(ndd) == want


@pytest.mark.oracle
def test_oracle_checkpoint_messages(folder):
    """The same mistakes raise the same exception types, with DALI's wording."""
    dalidyn = _dali()
    for lib in (dalidyn, ndd):
        ck = lib.checkpoint.Checkpoint()
        ck.register(lib.random.RNG(seed=1), "x")
        ck.collect()
        text = ck.serialize()
        assert json.loads(text)["version"] == 2
        ck2 = lib.checkpoint.Checkpoint()
        ck2.deserialize(text)
        with pytest.raises(TypeError, match="Type mismatch for operator 'x'"):
            ck2.register(lib.readers.File(file_root=folder), "x")
        with pytest.raises(ValueError, match="Invalid checkpoint entry for 'x'"):
            lib.checkpoint.Checkpoint().deserialize(json.dumps({"version": 2,
                                                                "states": {"x": 1}}))
        with pytest.raises(ValueError, match="Unsupported checkpoint format version 5"):
            lib.checkpoint.Checkpoint().deserialize(json.dumps({"version": 5, "states": {}}))
        with pytest.raises(KeyError):
            ck2.register(lib.random.RNG(seed=1), "y")


def test_get_state_takes_dalis_cuda_stream_argument(folder):
    reader = ndd.readers.File(file_root=folder)
    next(iter(reader.next_epoch(batch_size=3)))
    assert reader.get_state(cuda_stream=None) == reader.get_state()
    rng = ndd.random.RNG(seed=4)
    assert rng.get_state(cuda_stream=None) == rng.get_state() == rng.state
    with pytest.raises(TypeError):
        rng.get_state(None)                 # keyword-only, as DALI's
