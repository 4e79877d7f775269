import pathlib

import pytest
from iclr26_shared.cache import CACHE_ENV, cache_dir


def test_cache_env_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "c"
    assert cache_dir("energycp") == tmp_path / "c" / "energycp"


def test_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir("socp-gnn") == tmp_path / "iclr26" / "socp-gnn"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == pathlib.Path.home() / ".cache" / "iclr26"


@pytest.mark.parametrize("bad", ["", "..", "a/b", 3])
def test_bad_package_name(bad):
    with pytest.raises(ValueError, match="package: expected a plain folder name"):
        cache_dir(bad)
