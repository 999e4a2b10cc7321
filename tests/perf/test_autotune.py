"""numbakern.autotune: shape classes, the on-disk cache (keyed by device and shape class, written atomically),
tuning that picks the fastest config, and no tuning at all under the simulator."""

import json
import os

import numpy as np
import pytest

from numbakern import autotune
from numbakern.launch import LaunchConfig


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(autotune.ENABLE_ENV, raising=False)
    return tmp_path


def test_shape_class_rounds_up_to_powers_of_two():
    assert autotune.shape_class((1000, 33, 1)) == (1024, 64, 1)
    assert autotune.shape_class((4096, 4096, 4096)) == (4096, 4096, 4096)
    assert autotune.shape_class((4097, 0, 2)) == (8192, 0, 2)


def test_cache_key_names_kernel_device_and_class():
    assert autotune.cache_key("mm", "NVIDIA H200", (5120, 256, 5000)) == "mm|NVIDIA H200|8192x256x8192"
    assert autotune.cache_key("mm", "NVIDIA H100", (5120, 256, 5000)) != autotune.cache_key("mm", "NVIDIA H200", (5120,
            256, 5000))


def test_cache_roundtrip_merge_and_atomic_write(cache_dir):
    path = autotune.cache_path()
    assert path.parent == cache_dir
    assert autotune.load_cache() == {}
    autotune.store_entry("a|dev|1x1", {"config": {"x": 1}})
    autotune.store_entry("b|dev|2x2", {"config": {"x": 2}})
    entries = autotune.load_cache()
    assert entries == {"a|dev|1x1": {"config": {"x": 1}}, "b|dev|2x2": {"config": {"x": 2}}}
    assert json.loads(path.read_text())["version"] == autotune.CACHE_VERSION
    assert sorted(os.listdir(cache_dir)) == ["autotune.json"]  # no temporary file left behind


def test_corrupt_or_foreign_cache_counts_as_empty(cache_dir):
    path = autotune.cache_path()
    path.write_text("{not json")
    assert autotune.load_cache() == {}
    path.write_text(json.dumps({"version": 999, "entries": {"k": {}}}))
    assert autotune.load_cache() == {}
    autotune.store_entry("k|d|1", {"config": {"x": 1}})  # a corrupt file is replaced, not fatal
    assert autotune.load_cache() == {"k|d|1": {"config": {"x": 1}}}


def test_failed_write_leaves_old_cache_and_no_temp(cache_dir, monkeypatch):
    autotune.store_entry("k|d|1", {"config": {"x": 1}})

    def boom(*a, **k):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(autotune.os, "replace", boom)
        with pytest.raises(OSError):
            autotune.store_entry("k|d|2", {"config": {"x": 2}})
    assert autotune.load_cache() == {"k|d|1": {"config": {"x": 1}}}
    assert sorted(os.listdir(cache_dir)) == ["autotune.json"]


class FakeFactory:
    """Stands in for a specialize factory: its 'kernels' record launches instead of running."""

    def __init__(self):
        self.launches = []

    def __call__(self, **config):
        factory = self

        class Kernel:
            def __getitem__(self, launch):
                return lambda *args: factory.launches.append((dict(config), launch))

        return Kernel()


def _tuner(factory, **kw):
    return autotune.Autotuner(
        "fake_mm", factory,
        configs=[{"t": 1}, {"t": 2}, {"t": 3}],
        key=lambda a: a.shape,
        launch=lambda config, a: LaunchConfig((1,), (config["t"],)),
        sim_config={"t": 99}, **kw)


def test_simulator_never_tunes_nor_touches_the_cache(cache_dir, monkeypatch):
    monkeypatch.setattr(autotune.mode, "in_simulator", lambda: True)
    monkeypatch.setattr(autotune, "device_name", lambda: pytest.fail("asked for a device in the simulator"))
    monkeypatch.setattr(autotune, "time_launch", lambda *a, **k: pytest.fail("timed in the simulator"))
    factory = FakeFactory()
    tuner = _tuner(factory)
    assert not autotune.enabled()
    assert tuner(np.zeros((3, 4))) == {"t": 99}
    assert factory.launches == [({"t": 99}, ((1,), (99,), 0, 0))]
    assert not autotune.cache_path().exists()


def test_autotune_picks_fastest_caches_and_reuses(cache_dir, monkeypatch):
    monkeypatch.setattr(autotune.mode, "in_simulator", lambda: False)
    monkeypatch.setattr(autotune, "device_name", lambda: "Fake GPU")
    timed = []

    def fake_time(run, **kw):
        run()
        config = factory.launches[-1][0]
        timed.append(config["t"])
        return {1: 3.0, 2: 1.0, 3: 2.0}[config["t"]]

    monkeypatch.setattr(autotune, "time_launch", fake_time)
    factory = FakeFactory()
    tuner = _tuner(factory)
    a = np.zeros((1000, 30))
    assert tuner(a) == {"t": 2}
    assert timed == [1, 2, 3]
    entry = autotune.load_cache()["fake_mm|Fake GPU|1024x32"]
    assert entry["config"] == {"t": 2} and entry["ms"] == 1.0 and len(entry["timings_ms"]) == 3
    # same shape class: no new timing, in this process or in a fresh tuner reading the disk cache
    assert tuner(np.zeros((900, 17))) == {"t": 2}
    assert _tuner(factory).select(np.zeros((1024, 32))) == {"t": 2}
    assert timed == [1, 2, 3]
    # another shape class, another device: tuned again
    _tuner(factory).select(np.zeros((10, 10)))
    monkeypatch.setattr(autotune, "device_name", lambda: "Other GPU")
    _tuner(factory).select(np.zeros((1000, 30)))
    assert timed == [1, 2, 3] * 3
    assert len(autotune.load_cache()) == 3


def test_failing_config_is_skipped(cache_dir, monkeypatch):
    monkeypatch.setattr(autotune.mode, "in_simulator", lambda: False)
    monkeypatch.setattr(autotune, "device_name", lambda: "Fake GPU")

    def fake_time(run, **kw):
        run()
        config = factory.launches[-1][0]
        if config["t"] == 2:
            raise RuntimeError("too many resources requested for launch")
        return float(config["t"])

    monkeypatch.setattr(autotune, "time_launch", fake_time)
    factory = FakeFactory()
    with pytest.warns(RuntimeWarning, match="too many resources"):
        assert _tuner(factory).select(np.zeros((8, 8))) == {"t": 1}


def test_disabled_by_environment(cache_dir, monkeypatch):
    monkeypatch.setattr(autotune.mode, "in_simulator", lambda: False)
    monkeypatch.setenv(autotune.ENABLE_ENV, "0")
    factory = FakeFactory()
    assert _tuner(factory).select(np.zeros((8, 8))) == {"t": 1}
    assert not autotune.cache_path().exists()


@pytest.mark.sim
def test_flagship_autotuner_is_off_in_simulator():
    from numbakern.kernels import matmul_fast as mf

    assert mf.autotuner.select(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32),
                               np.zeros((64, 64), np.float32)) == mf.SIM_CONFIG


def test_a_planted_entry_outside_the_kernels_configurations_is_not_used(cache_dir, monkeypatch):
    """The cache is data that chooses among the kernel's own configurations (docs/design/threat-model.md)."""
    monkeypatch.setattr(autotune.mode, "in_simulator", lambda: False)
    monkeypatch.setattr(autotune, "device_name", lambda: "Fake GPU")
    times = {1: 3.0, 2: 1.0, 3: 2.0}
    factory = FakeFactory()
    monkeypatch.setattr(autotune, "time_launch", lambda run, **kw: run() or times[factory.launches[-1][0]["t"]])
    autotune.store_entry("fake_mm|Fake GPU|1024x32", {"config": {"t": 4096}})  # a block no GPU launches
    assert _tuner(factory).select(np.zeros((1000, 30))) == {"t": 2}
    assert autotune.load_cache()["fake_mm|Fake GPU|1024x32"]["config"] == {"t": 2}
