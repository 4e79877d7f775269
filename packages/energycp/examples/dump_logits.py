"""Dump logits of a torchvision classifier on a local image folder, for iclr26-energycp.

Nothing is downloaded: pass a local ``ImageFolder`` root (one sub-folder per class) and a local
state-dict file. Writes an ``.npz`` with ``logits`` (n, K) and ``labels`` (n,), which
``iclr26-energycp calibrate/evaluate`` and the ``paper`` benchmark scale read.

    python dump_logits.py --images VAL_FOLDER --arch resnet50 --weights resnet50.pth --out imagenet_resnet50.npz
"""
import argparse

import numpy as np
import torch
import torchvision
from torchvision import transforms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", required=True, help="ImageFolder root (one sub-folder per class)")
    parser.add_argument("--arch", default="resnet50", help="a torchvision.models constructor name")
    parser.add_argument("--weights", required=True, help="local state_dict (.pth) for that architecture")
    parser.add_argument("--num-classes", type=int, default=1000)
    parser.add_argument("--size", type=int, default=224, help="input resolution (32 for CIFAR models)")
    parser.add_argument("--out", required=True, help="output .npz path")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    tf = transforms.Compose([transforms.Resize(int(args.size * 8 / 7)), transforms.CenterCrop(args.size),
                             transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = torchvision.datasets.ImageFolder(args.images, transform=tf)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, num_workers=4)
    model = getattr(torchvision.models, args.arch)(weights=None, num_classes=args.num_classes)
    model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    model.eval().to(args.device)
    logits, labels = [], []
    with torch.inference_mode():
        for x, y in loader:
            logits.append(model(x.to(args.device)).double().cpu())
            labels.append(y)
    np.savez(args.out, logits=torch.cat(logits).numpy(), labels=torch.cat(labels).numpy())
    print(f"{sum(len(y) for y in labels)} rows -> {args.out}")


if __name__ == "__main__":
    main()
