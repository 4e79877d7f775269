import pytest
import torch
from iclr26_stod import TensorBatches, build_model, fit, load_images


@pytest.fixture(scope="session")
def trained_direct():
    """A direct-encoded SNN (T = 2) fitted for 2 epochs on digits (≈ 96 % clean), with 48 test images:
    ``(model in eval mode, x [48, 1, 8, 8], y [48])``. About 1-2 CPU s."""
    data = load_images("digits", seed=0)
    torch.manual_seed(0)
    model = build_model("direct", T=2)
    fit(model, TensorBatches(data.x_train, data.y_train, 64, shuffle=True, seed=0), epochs=2, lr=1e-2, device="cpu")
    return model.eval(), data.x_test[:48], data.y_test[:48]
