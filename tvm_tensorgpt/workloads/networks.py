"""The seed's five workloads as PyTorch modules, batch 1, with the reference layer shapes (and
one module of training-only kernels, ``TRAINING_ONLY``).

torchvision does not import beside the CPU torch wheel this project installs, so the networks are
defined here with torchvision's layer configurations: ResNet-18/50, MobileNetV2, DenseNet-121,
R3D-18 (video ResNet), and a BERT-base-style encoder (2 identical layers: tuning tasks repeat per
layer). Weights are random (seeded): only shapes matter for tuning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, dims: int = 2) -> None:
        super().__init__()
        conv = nn.Conv2d if dims == 2 else nn.Conv3d
        bn = nn.BatchNorm2d if dims == 2 else nn.BatchNorm3d
        self.body = nn.Sequential(
            conv(cin, cout, 3, stride, 1, bias=False), bn(cout), nn.ReLU(),
            conv(cout, cout, 3, 1, 1, bias=False), bn(cout),
        )  # fmt: skip
        self.down = (
            nn.Sequential(conv(cin, cout, 1, stride, bias=False), bn(cout)) if stride != 1 or cin != cout else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, block: str, layers: list[int], dims: int = 2, classes: int = 1000) -> None:
        super().__init__()
        conv, bn = (nn.Conv2d, nn.BatchNorm2d) if dims == 2 else (nn.Conv3d, nn.BatchNorm3d)
        if dims == 2:
            stem = [conv(3, 64, 7, 2, 3, bias=False), bn(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        else:  # R3D-18 stem: (3, 7, 7) kernel, stride (1, 2, 2), no pooling
            stem = [conv(3, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False), bn(64), nn.ReLU()]
        blocks: list[nn.Module] = []
        cin = 64
        for i, count in enumerate(layers):
            width = 64 * 2**i
            for j in range(count):
                stride = 2 if i > 0 and j == 0 else 1
                if block == "basic":
                    blocks.append(BasicBlock(cin, width, stride, dims))
                    cin = width
                else:
                    blocks.append(Bottleneck(cin, width, stride))
                    cin = width * 4
        self.features = nn.Sequential(*stem, *blocks)
        self.pool = nn.AdaptiveAvgPool2d(1) if dims == 2 else nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
        ]  # fmt: skip
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for expand, cout, count, stride in self.CONFIG:
            for i in range(count):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                cin = cout
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int = 32, bn_size: int = 4) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, bn_size * growth, 1, bias=False),
            nn.BatchNorm2d(bn_size * growth), nn.ReLU(), nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.body(x)], 1)


class DenseNet121(nn.Module):
    def __init__(self, growth: int = 32, blocks: tuple[int, ...] = (6, 12, 24, 16), classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        ]  # fmt: skip
        channels = 64
        for i, count in enumerate(blocks):
            for _ in range(count):
                layers.append(DenseLayer(channels, growth))
                channels += growth
            if i != len(blocks) - 1:
                layers += [nn.BatchNorm2d(channels), nn.ReLU(), nn.Conv2d(channels, channels // 2, 1, bias=False),
                           nn.AvgPool2d(2, 2)]  # fmt: skip
                channels //= 2
        layers += [nn.BatchNorm2d(channels), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class EncoderLayer(nn.Module):
    """BERT-base layer: 12-head self-attention (hidden 768) and a GELU feed-forward (3072)."""

    def __init__(self, hidden: int = 768, heads: int = 12, ffn: int = 3072) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = self.qkv(x).reshape(batch, seq, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / head_dim**0.5
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, seq, hidden)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class BertEncoder(nn.Module):
    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer() for _ in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class ThinKinds(nn.Module):
    """Kernels of the kinds the networks above have few of, in shapes no held-out task has:
    batched matmuls (the networks' only two are held out), dense layers, depthwise convolutions
    and reductions. Training data only: it is not a model anyone tunes.

    From one (1, 256, 512) input: two attention + feed-forward layers of other widths and head
    counts (8 heads of 64 and 16 of 32, sequence 256; then 8 heads of 64 on a 64-token slice), a
    plain batched matmul, and the result folded into a 128-channel 32x32 image for 3x3 and 5x5
    depthwise convolutions and the pooling reductions."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = EncoderLayer(hidden=512, heads=8, ffn=2048)
        self.narrow = EncoderLayer(hidden=512, heads=16, ffn=1024)
        self.short = EncoderLayer(hidden=512, heads=8, ffn=1536)
        self.dw3 = nn.Conv2d(128, 128, 3, padding=1, groups=128)
        self.dw5 = nn.Conv2d(128, 128, 5, stride=2, padding=2, groups=128)
        self.head = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.narrow(self.wide(x))
        tokens = self.short(x[:, :64])
        mixed = torch.matmul(x.reshape(4, 256, 128), tokens.reshape(4, 64, 128).transpose(1, 2))  # (4, 256, 64)
        image = (x + mixed.reshape(1, 256, 256).repeat(1, 1, 2)).reshape(1, 128, 32, 32)
        image = self.dw5(torch.relu(self.dw3(image)))
        pooled = nn.functional.max_pool2d(image, 16).flatten(1) + image.mean(dim=(2, 3))
        return torch.log_softmax(self.head(pooled), dim=-1)


NETWORKS: dict[str, tuple[str, Callable[[], nn.Module], tuple[int, ...]]] = {
    "resnet18": ("ResNet-18, 224x224", lambda: ResNet("basic", [2, 2, 2, 2]), (1, 3, 224, 224)),
    "resnet50": ("ResNet-50, 224x224", lambda: ResNet("bottleneck", [3, 4, 6, 3]), (1, 3, 224, 224)),
    "mobilenetv2": ("MobileNetV2, 224x224", MobileNetV2, (1, 3, 224, 224)),
    "densenet121": ("DenseNet-121, 224x224", DenseNet121, (1, 3, 224, 224)),
    "r3d18": ("R3D-18 video ResNet, 16x112x112 clip", lambda: ResNet("basic", [2, 2, 2, 2], dims=3, classes=400),
              (1, 3, 16, 112, 112)),
    "bert": ("BERT-base-style encoder (2 layers), sequence 128", BertEncoder, (1, 128, 768)),
}  # fmt: skip
# Networks whose tasks are training data only (not offered as models to tune).
TRAINING_ONLY: dict[str, tuple[str, Callable[[], nn.Module], tuple[int, ...]]] = {
    "thinkinds": ("batched matmuls, dense layers, depthwise convolutions and reductions (training data)",
                  ThinKinds, (1, 256, 512)),
}  # fmt: skip


def build_network(name: str) -> tuple[nn.Module, tuple[Any, ...]]:
    """(eval-mode module with seeded random weights, example input)."""
    known = NETWORKS | TRAINING_ONLY
    if name not in known:
        raise ValueError(f"unknown network {name!r}; known networks: {', '.join(known)}")
    _, make, shape = known[name]
    torch.manual_seed(0)
    return make().eval(), (torch.randn(*shape),)
