"""The iBOT-style dense objective: teacher targets, EMA update, gradients and a reproducible run."""
import math

import pytest
import torch
from iclr26_vit_token import SpecViT, make_shapes_seg, pretrain
from iclr26_vit_token.pretrain import (
    STUDENT_TEMPERATURE,
    PatchTeacher,
    PretrainHeads,
    pretrain_loss,
    random_patch_mask,
    to_tensor,
)


def _setup(depth=1, n=8, seed=0):
    torch.manual_seed(seed)
    model = SpecViT(depth=depth)
    heads = PretrainHeads.for_model(model, seed=seed)
    data = make_shapes_seg(n, seed=seed)
    return model, heads, data, to_tensor(data.images)


def test_teacher_targets_are_centred_sharpened_distributions():
    model, heads, _, x = _setup()
    teacher = PatchTeacher(model, heads, momentum=0.9, temperature=0.04, center_momentum=0.5)
    with torch.no_grad():
        logits = heads.patch_proj(model.forward_features(x)["patches"])  # teacher == student at the start
    probs = teacher.targets(x)
    assert probs.shape == (8, 64, heads.patch_proj.prototypes.shape[0])
    torch.testing.assert_close(probs, torch.softmax(logits / 0.04, dim=-1), atol=1e-5, rtol=0)
    torch.testing.assert_close(teacher.center, 0.5 * logits.mean(dim=(0, 1)), atol=1e-6, rtol=0)
    again = teacher.targets(x)  # now centred by the first batch's mean
    torch.testing.assert_close(again, torch.softmax((logits - 0.5 * logits.mean(dim=(0, 1))) / 0.04, dim=-1),
                               atol=1e-5, rtol=0)
    assert not any(p.requires_grad for p in teacher.parameters())


def test_teacher_is_an_ema_of_the_student_with_a_cosine_momentum():
    model, heads, _, _ = _setup()
    teacher = PatchTeacher(model, heads, momentum=0.9)
    before = {k: v.clone() for k, v in teacher.model.state_dict().items()}
    with torch.no_grad():
        for p in list(model.parameters()) + list(heads.patch_proj.parameters()):
            p.add_(1.0)
    teacher.update(model, heads, step=0, total=10)  # m = 0.9 at the first step
    k = "blocks.0.attn.qkv.weight"
    torch.testing.assert_close(teacher.model.state_dict()[k], 0.9 * before[k] + 0.1 * model.state_dict()[k])
    torch.testing.assert_close(teacher.proj.prototypes, heads.patch_proj.prototypes - 0.9)
    snapshot = teacher.model.state_dict()[k].clone()
    teacher.update(model, heads, step=9, total=10)  # m = 1 at the last step: the teacher stays
    torch.testing.assert_close(teacher.model.state_dict()[k], snapshot)
    m_mid = 1 - 0.1 * 0.5 * (1 + math.cos(math.pi * 4 / 9))
    assert 0.9 < m_mid < 1.0


def test_ibot_loss_trains_the_student_only_through_masked_patches():
    model, heads, data, x = _setup()
    teacher = PatchTeacher(model, heads)
    mask = random_patch_mask(len(x), 64, 0.4, torch.Generator().manual_seed(0))
    loss, parts = pretrain_loss(model, heads, x, torch.as_tensor(data.labels), mask, teacher=teacher)
    assert set(parts) == {"ce", "ibot"} and math.isfinite(parts["ibot"])
    # the distillation term equals the cross-entropy of the teacher's distribution and the student's
    with torch.no_grad():
        t = torch.softmax(teacher.proj(teacher.model.forward_features(x)["patches"]) / 0.04, -1)[mask]
        s = heads.patch_proj(model.forward_features(x, mask, heads.mask_token)["patches"][mask])
        ref = -(t * torch.log_softmax(s / STUDENT_TEMPERATURE, -1)).sum(-1).mean()
    assert parts["ibot"] == pytest.approx(float(ref), rel=1e-4)
    loss.backward()
    assert heads.patch_proj.prototypes.grad.abs().sum() > 0 and heads.mask_token.grad.abs().sum() > 0
    assert heads.pixel_head.weight.grad is None
    assert all(p.grad is None for p in teacher.parameters())


def test_ibot_pretraining_is_reproducible():
    model, _, data, _ = _setup(depth=1, n=32)
    runs = []
    for _ in range(2):
        m = SpecViT(depth=1)
        m.load_state_dict(model.state_dict())
        torch.manual_seed(len(runs))  # the global RNG must not matter
        runs.append(pretrain(m, data, steps=4, batch_size=8, objective="cls+ibot", seed=1).history)
    assert runs[0] == runs[1] and all(set(h) == {"ce", "ibot", "loss"} for h in runs[0])
    assert all(math.isfinite(h["ibot"]) for h in runs[0])
    with pytest.raises(ValueError, match="teacher_momentum"):
        pretrain(SpecViT(depth=1), data, steps=1, objective="cls+ibot", teacher_momentum=1.0)
