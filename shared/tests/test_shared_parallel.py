"""parallel_map and fan_out: every result once, in the tasks' order, the same in this process and in workers."""
import numpy as np
import pytest
from iclr26_shared.device import current_threads, set_threads
from iclr26_shared.parallel import fan_out, parallel_map

# worker processes import what they run: functions of installed modules, not of this test file


def test_parallel_map_yields_every_result():
    assert sorted(parallel_map(abs, range(-2, 3))) == [0, 1, 1, 2, 2]


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend: expected one of"):
        list(parallel_map(abs, [1, 2], backend="spark", jobs=2))


@pytest.mark.slow  # starts two worker processes
def test_fan_out_same_results_in_process_and_in_workers():
    tasks = {("rng", s): (np.random.default_rng, (s,)) for s in (7, 3, 5)} | {"threads": (current_threads, ())}
    before = current_threads()
    try:
        set_threads(1)
        local = fan_out(tasks)
        set_threads(2)
        remote = fan_out(tasks)
        on_gpu = fan_out(tasks, device="cuda:0")  # never fanned out: one task at a time in this process
    finally:
        set_threads(before)
    assert list(local) == list(remote) == list(tasks)
    draws = [k for k in tasks if k != "threads"]
    assert all(np.array_equal(local[k].normal(size=3), remote[k].normal(size=3)) for k in draws)
    assert local["threads"] == remote["threads"] == 1 and on_gpu["threads"] == 2  # one worker thread each
