"""The benchmark's tasks (judges, then one job per model and seed) give the same results in this process and in
worker processes."""
import numpy as np
import pytest
import torch
from iclr26_diffsda.bench import CONFIGS, JUDGES, MODELS, _make, make_judge, train_eval
from iclr26_shared.parallel import fan_out

TIMINGS = {"train_seconds", "job_cpu_seconds", "encode_seq_per_s", "decode_seq_per_s"}


def _run(tasks: list[tuple], jobs: int) -> dict:
    """The tasks under a budget of ``jobs`` threads: in this process (1) or in ``jobs`` one-thread workers."""
    torch.set_num_threads(jobs)
    return fan_out({key: (fn, args) for key, fn, args in tasks}, device="cpu")


@pytest.mark.slow  # two worker processes import torch
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_tasks_equal_in_process_and_in_workers():
    cfg = CONFIGS["smoke"]
    judge_tasks = [(name, make_judge, (cfg, 5, name)) for name in JUDGES]
    threads = torch.get_num_threads()
    try:
        torch.manual_seed(123)  # a state the workers do not share: a job that does not seed itself differs
        judges = _run(judge_tasks, 1)
        jobs = [(name, train_eval, (cfg, name, 3, "cpu", judges)) for name in MODELS]
        local = _run(jobs, 1)
        remote_judges, remote = _run(judge_tasks[::-1], 2), _run(jobs[::-1], 2)
    finally:
        torch.set_num_threads(threads)
    x = _make(cfg, 20, 11).x
    for name in JUDGES:
        a, b = judges[name].predict_proba(x), remote_judges[name].predict_proba(x)
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), name
    for name in MODELS:
        a, b = local[name], remote[name]
        assert a["loss"] == b["loss"], name
        assert {k: v for k, v in a["row"].items() if k not in TIMINGS} == \
            {k: v for k, v in b["row"].items() if k not in TIMINGS}, name
        state_a, state_b = a["model"].state_dict(), b["model"].state_dict()
        assert state_a.keys() == state_b.keys() and all(torch.equal(state_a[k], state_b[k]) for k in state_a), name
