"""The shared argparse types accept what they name and refuse the rest with the expected and the given."""
import argparse

import pytest
from iclr26_shared.cli import fraction_arg, positive_int, seed_arg


@pytest.mark.parametrize(("kind", "good", "bad"), [
    (positive_int, {"1": 1, "12": 12}, ["0", "-3", "2.5", "x"]),
    (seed_arg, {"0": 0, "17": 17}, ["-1", "1.5", "seed"]),
    (fraction_arg, {"0.3": 0.3, "1e-2": 0.01}, ["0", "1", "-0.1", "1.5", "nan", "half"]),
])
def test_types_parse_and_refuse(kind, good, bad):
    for text, value in good.items():
        assert kind(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=rf"expected .*, got {text!r}"):
            kind(text)
