import numpy as np
import pytest
import torch
from iclr26_shared.device import device_name, resolve_device, set_threads, to_device, worker_budget
from iclr26_shared.seeding import seed_everything


def draws(seed):
    rng = seed_everything(seed)
    return rng.normal(size=5), np.random.rand(3), torch.randn(4)


def test_same_seed_gives_identical_numpy_and_torch_numbers():
    a, b = draws(7), draws(7)
    for x, y in zip(a[:2], b[:2], strict=True):
        np.testing.assert_array_equal(x, y)
    assert torch.equal(a[2], b[2])


def test_different_seeds_differ():
    assert not np.array_equal(draws(1)[0], draws(2)[0])


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "3", True])
def test_seed_is_checked(bad):
    with pytest.raises((TypeError, ValueError), match="seed"):
        seed_everything(bad)


def test_auto_falls_back_to_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert device_name("cpu").startswith("cpu")


def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        resolve_device("cuda")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", ""])
def test_unknown_device_names_the_argument(bad):
    with pytest.raises(ValueError, match="device"):
        resolve_device(bad)


def test_to_device_moves_nested_containers():
    batch = {"x": torch.zeros(2), "pair": (torch.ones(1), 3), "name": "a"}
    moved = to_device(batch, "cpu")
    assert moved["x"].device.type == "cpu" and moved["pair"][1] == 3 and moved["name"] == "a"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_resolves_when_present():
    assert resolve_device("cuda").type == "cuda"


def test_worker_budget_stays_within_the_callers_threads():
    before = torch.get_num_threads()
    try:
        set_threads(1)
        assert [worker_budget(n) for n in (None, -1, 1, 2, 8)] == [1, 1, 1, 1, 1]
        set_threads(3)
        assert [worker_budget(n) for n in (None, -1, 1, 2, 8)] == [3, 3, 1, 2, 3]
    finally:
        set_threads(before)
