import copy

import pytest
import torch
from iclr26_vit_token import BASE, SpecViT, count_flops, vit_base_config, vit_cpu_config, vit_small_config


def _models(seed=0, **spec):
    torch.manual_seed(seed)
    base = SpecViT(**vit_cpu_config(), **BASE)
    return base, SpecViT.from_base(base, **spec)


def _formula(D, n_qkv, n_norm, n_ls=0):
    return n_qkv * (3 * D * D + 3 * D) + n_norm * 2 * 2 * D + n_ls * 2 * D


@pytest.mark.parametrize("cfg, base, extra", [(vit_cpu_config(), 307_392, 25_728),
                                              (vit_small_config(), 21_665_664, 1_783_296),
                                              (vit_base_config(), 85_798_656, 7_105_536)])
def test_parameter_overhead_of_the_presets(cfg, base, extra):
    with torch.device("meta"):
        over = SpecViT(**cfg).param_overhead()
    assert (over["base"], over["extra"]) == (base, extra)
    assert over["ratio"] == extra / base


@pytest.mark.parametrize("s_norm", ["none", "first_third", "first_half", "all", [1, 4]])
@pytest.mark.parametrize("s_qkv", ["none", "first_third", "first_half", [5]])
def test_parameter_formula_on_a_grid(s_norm, s_qkv):
    model = SpecViT(**vit_cpu_config(), spec_norm_blocks=s_norm, spec_qkv_blocks=s_qkv)
    counts = {"none": 0, "first_third": 2, "first_half": 3, "all": 6}
    n_norm = counts[s_norm] if isinstance(s_norm, str) else len(s_norm)
    n_qkv = counts[s_qkv] if isinstance(s_qkv, str) else len(s_qkv)
    over = model.param_overhead()
    assert over["extra"] == _formula(64, n_qkv, n_norm)
    assert over["base"] == 307_392
    assert sum(p.numel() for p in model.parameters()) == 307_392 + over["extra"]  # both copies counted


def test_layerscale_overhead_follows_the_norms():
    model = SpecViT(**vit_cpu_config(), layerscale=1e-5)
    ls_base = SpecViT(**vit_cpu_config(), layerscale=1e-5, **BASE).param_overhead()["base"]
    over = model.param_overhead()
    assert over["base"] == ls_base == 307_392 + 6 * 2 * 64
    assert over["extra"] == _formula(64, 2, 3, n_ls=3)


def test_from_base_preserves_the_function_forward_and_backward():
    base, spec = _models(0)
    base, spec = base.double(), spec.double()
    x = torch.randn(3, 3, 32, 32, dtype=torch.float64)
    fb, fs = base.forward_features(x), spec.forward_features(x)
    for k in ("cls", "patches"):
        assert (fb[k] - fs[k]).abs().max() <= 1e-6
    fb["patches"].square().mean().add(fb["cls"].sum()).backward()
    fs["patches"].square().mean().add(fs["cls"].sum()).backward()
    gb, gs = dict(base.named_parameters()), dict(spec.named_parameters())
    for name in ("blocks.0.norm1", "blocks.1.attn.qkv", "blocks.2.norm2"):
        for p in ("weight", "bias"):
            total = gs[f"{name}.prefix.{p}"].grad + gs[f"{name}.patch.{p}"].grad
            assert torch.allclose(total, gb[f"{name}.{p}"].grad, atol=1e-10)
    assert torch.allclose(gs["blocks.5.mlp.fc1.weight"].grad, gb["blocks.5.mlp.fc1.weight"].grad, atol=1e-10)


def test_from_base_makes_independent_copies():
    base, spec = _models(1)
    with torch.no_grad():
        spec.blocks[0].attn.qkv.patch.weight.add_(1.0)
    assert not torch.equal(spec.blocks[0].attn.qkv.prefix.weight, spec.blocks[0].attn.qkv.patch.weight)
    assert torch.equal(spec.blocks[0].attn.qkv.prefix.weight, base.blocks[0].attn.qkv.weight)


def test_specialised_copies_really_route_cls_and_patches():
    """A wrongly ordered split (CLS through the patch copy) changes the output and is caught here."""
    base, spec = _models(2)
    x = torch.randn(2, 3, 32, 32)
    ref = spec.forward_features(x)
    with torch.no_grad():
        spec.blocks[0].norm1.prefix.bias.add_(0.5)
    out = spec.forward_features(x)
    assert not torch.allclose(out["cls"], ref["cls"])
    # patches change only through attention to [CLS]; the patch copy is untouched
    with torch.no_grad():
        spec.blocks[0].norm1.prefix.bias.sub_(0.5)
        spec.blocks[0].attn.qkv.patch.bias.add_(0.5)
    assert not torch.allclose(spec.forward_features(x)["patches"], ref["patches"])


def test_flops_are_identical_at_two_image_sizes():
    base, spec = _models(0)
    for size in (32, 48):
        assert count_flops(spec, size) == count_flops(base, size) > 0
    assert count_flops(base, 48) > count_flops(base, 32)


@pytest.mark.parametrize("num_registers, path", [(0, "cls"), (2, "cls"), (2, "patch")])
def test_permuting_patches_permutes_outputs_and_keeps_cls(num_registers, path):
    torch.manual_seed(3)
    model = SpecViT(**vit_cpu_config(), num_registers=num_registers, register_path=path).double().eval()
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    tokens = model.prepare_tokens(x)
    n_skip = 1 + num_registers
    perm = torch.randperm(64)
    permuted = torch.cat([tokens[:, :n_skip], tokens[:, n_skip:][:, perm]], dim=1)

    def run(t):
        for block in model.blocks:
            t = block(t)
        return model.norm(t)

    a, b = run(tokens), run(permuted)
    assert torch.allclose(a[:, 0], b[:, 0], atol=1e-10)
    assert torch.allclose(a[:, n_skip:][:, perm], b[:, n_skip:], atol=1e-10)


def test_registers_follow_their_route():
    torch.manual_seed(4)
    for path, expected_prefix in (("cls", 3), ("patch", 1)):
        model = SpecViT(**vit_cpu_config(), num_registers=2, register_path=path)
        assert model.n_prefix == expected_prefix
        assert model.blocks[0].attn.qkv.n_prefix == expected_prefix
        f = model.forward_features(torch.randn(2, 3, 32, 32))
        assert f["registers"].shape == (2, 2, 64) and f["patches"].shape == (2, 64, 64)


def test_variable_image_size_and_depth_one():
    model = SpecViT(**vit_cpu_config())
    f = model.forward_features(torch.randn(1, 3, 48, 40))
    assert f["patches"].shape == (1, 12 * 10, 64)
    one = SpecViT(img_size=16, patch_size=4, dim=32, depth=1, heads=2)
    assert one.s_qkv == () and one.s_norm == (0,)
    assert one.param_overhead()["extra"] == 2 * 2 * 32


def test_head_and_state_dict_keys():
    model = SpecViT(**vit_cpu_config(), num_classes=8)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 8)
    keys = set(model.state_dict())
    assert {"blocks.0.norm1.prefix.weight", "blocks.0.norm1.patch.weight", "blocks.1.attn.qkv.prefix.weight",
            "blocks.2.attn.qkv.weight", "blocks.3.norm1.weight", "norm.weight", "head.weight"} <= keys
    assert "head.weight" not in model.backbone_parameters()


def test_bad_input():
    with pytest.raises(ValueError, match="img_size"):
        SpecViT(img_size=30, patch_size=4)
    with pytest.raises(ValueError, match="spec_qkv_blocks"):
        SpecViT(**vit_cpu_config(), spec_qkv_blocks=[0, 6])
    with pytest.raises(ValueError, match="spec_norm_blocks"):
        SpecViT(**vit_cpu_config(), spec_norm_blocks="first_quarter")
    with pytest.raises(ValueError, match="register_path"):
        SpecViT(register_path="both")
    model = SpecViT(**vit_cpu_config())
    with pytest.raises(ValueError, match="images"):
        model(torch.randn(1, 3, 30, 32))
    with pytest.raises(ValueError, match="images"):
        model(torch.randn(1, 1, 32, 32))


def test_loading_a_shared_checkpoint_names_the_missing_layer():
    base, spec = _models(0)
    fresh = copy.deepcopy(spec)
    with pytest.raises(ValueError, match=r"blocks\.0\.norm1"):
        fresh.load_state_dict(base.state_dict(), strict=False)
    fresh.load_state_dict(spec.state_dict())


def test_from_base_refuses_another_architecture():
    base, spec = _models(0)
    with pytest.raises(ValueError, match="dim"):
        SpecViT.from_base(base, dim=32)
    with pytest.raises(ValueError, match="depth"):
        SpecViT.from_base(base, depth=4)
    with pytest.raises(ValueError, match="shares"):
        SpecViT.from_base(spec, **BASE)
    with pytest.raises(TypeError, match="base"):
        SpecViT.from_base(torch.nn.Linear(2, 2))


def test_converter_from_timm_is_function_preserving():
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    vit = timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=4, embed_dim=64, depth=3,
                                                           num_heads=2, num_classes=0, reg_tokens=2).eval()
    spec = SpecViT.from_base(vit).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        ref = vit.forward_features(x)
        out = spec.forward_features(x)
    assert torch.allclose(ref[:, 0], out["cls"], atol=1e-5)
    assert torch.allclose(ref[:, 3:], out["patches"], atol=1e-5)


@pytest.mark.cuda
def test_cuda_matches_cpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    base, spec = _models(0)
    x = torch.randn(2, 3, 32, 32)
    out = spec.cuda().forward_features(x.cuda())["patches"].cpu()
    assert torch.allclose(out, spec.cpu().forward_features(x)["patches"], atol=1e-4)
