"""numbakern.bench without a GPU: the timing procedure against a simulated device clock, the sweep's report, and
the refusal to time kernels in the simulator."""

from __future__ import annotations

import csv
import importlib.util

import numpy as np
import pytest

from numbakern import Work, bench


class SimulatedDevice:
    """A GPU whose queue runs each call of ``work`` for the time ``cost(call number)`` in milliseconds; its events
    read the device clock, which the queue advances."""

    def __init__(self, cost):
        self.cost, self.clock, self.calls, self.syncs = cost, 0.0, 0, 0

    def work(self):
        self.calls += 1
        self.clock += self.cost(self.calls)

    def pair(self):
        return [None], [None]

    def record(self, event):
        event[0] = self.clock

    def elapsed_ms(self, start, end):
        return end[0] - start[0]

    def synchronize(self):
        self.syncs += 1


def test_do_bench_is_the_median_of_per_call_times_after_a_warm_up(rng):
    # the first call compiles (500 ms); afterwards calls take 0.2 ms with noise and rare 50x outliers
    noise = rng.normal(0.0, 0.01, 10_000)
    outliers = rng.random(10_000) < 0.02

    def cost(k):
        return 500.0 if k == 1 else 0.2 + noise[k] + (10.0 if outliers[k] else 0.0)

    device = SimulatedDevice(cost)
    ms = bench.do_bench(device.work, budget_s=0.2, events=device)
    assert ms == pytest.approx(0.2, abs=0.01)  # neither the compilation nor the outliers move the median
    # the second call is the estimate; a sample is one untimed call and a batch of ceil(1 ms / estimate) calls;
    # as many samples as fit in the budget, at most 100
    estimate = cost(2)
    batch = int(np.ceil(1.0 / estimate))
    samples = max(5, min(100, int(200 / (estimate * batch))))
    assert device.calls == 2 + 3 + samples * (1 + batch)


def test_do_bench_takes_at_least_min_samples_and_refuses_a_bad_budget():
    device = SimulatedDevice(lambda k: 30.0)  # long calls: the budget allows fewer than min_samples
    assert bench.do_bench(device.work, budget_s=0.01, min_samples=7, events=device) == 30.0
    assert device.calls == 1 + 1 + 1 + 7 * 2  # warm-up, estimate, one more, and 7 samples of 1 + 1 calls
    with pytest.raises(ValueError, match="budget_s must be positive"):
        bench.do_bench(device.work, budget_s=0, events=device)


def test_rate_picks_gflops_for_compute_bound_work():
    assert bench.rate(Work(flops=2e9, bytes=1e6), 1.0) == (pytest.approx(2000.0), "GFLOP/s")
    assert bench.rate(Work(flops=1e6, bytes=3e9), 2.0) == (pytest.approx(1500.0), "GB/s")


def test_sweep_times_every_implementation_at_every_size_it_applies_to():
    clocks = {}

    def implementation(per_element_ms, largest):
        def make(n):
            if n > largest:
                return None
            device = clocks.setdefault("device", SimulatedDevice(lambda k: 0.0))
            device.cost = lambda k: per_element_ms * n
            return device.work
        return make

    device = clocks.setdefault("device", SimulatedDevice(lambda k: 0.0))  # one device: each make sets its cost
    seen = []
    result = bench.sweep({"fast": implementation(1e-4, 1 << 20), "slow": implementation(1e-3, 4096)},
                         [{"n": 1024}, {"n": 8192}], work=lambda n: Work(bytes=8.0 * n), budget_s=0.05,
                         events=device, on_row=seen.append)
    assert [(r["impl"], r["size"]["n"]) for r in result.rows] == [("fast", 1024), ("slow", 1024), ("fast", 8192)]
    assert seen == result.rows
    fast = result.get({"n": 8192}, "fast")
    assert fast["ms"] == pytest.approx(0.8192) and fast["unit"] == "GB/s"
    assert fast["rate"] == pytest.approx(8.0 * 8192 / 0.8192e-3 / 1e9)
    table = result.markdown().splitlines()
    assert table[0] == "| size | fast | slow |"
    assert table[3].startswith("| 8192 | 0.819 ms (") and table[3].endswith("| n/a |")


def test_a_sweep_report_as_csv_and_plot(tmp_path):
    device = SimulatedDevice(lambda k: 0.5)
    result = bench.sweep({"only": lambda n: device.work}, [{"n": 10}, {"n": 20}], budget_s=0.05, events=device)
    result.write_csv(tmp_path / "sweep.csv")
    rows = list(csv.DictReader(open(tmp_path / "sweep.csv")))
    assert [(r["n"], r["impl"], float(r["ms"]), r["unit"]) for r in rows] == [("10", "only", 0.5, ""),
                                                                            ("20", "only", 0.5, "")]
    drew = result.plot(tmp_path / "sweep.png")
    if importlib.util.find_spec("matplotlib") is None:
        assert drew is False
    else:
        assert drew and (tmp_path / "sweep.png").stat().st_size > 1000


@pytest.mark.sim
def test_timing_in_the_simulator_is_refused():
    with pytest.raises(RuntimeError, match="numbakern.bench times kernels on a GPU.*simulator"):
        bench.do_bench(lambda: np.zeros(1))
