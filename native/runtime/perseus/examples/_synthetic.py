"""Models and data shared by the examples: torchvision's models when torchvision is installed, and two
built-in models that need nothing but torch."""

import torch
import torch.nn as nn

BUILT_IN = ("small_cnn", "mlp")


def build_model(name: str) -> nn.Module:
    if name == "small_cnn":
        return nn.Sequential(
            nn.Conv2d(3, 32, kernel_size=7, stride=4, padding=3), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, kernel_size=3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, 1000))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(3 * 224 * 224, 256), nn.ReLU(inplace=True), nn.Linear(256, 1000))
    try:
        from torchvision import models
    except ImportError:
        raise SystemExit("--model {}: torchvision is not installed; use one of the built-in models: {}".format(
            name, ", ".join(BUILT_IN)))
    if not hasattr(models, name):
        raise SystemExit("--model {}: torchvision has no such model".format(name))
    return getattr(models, name)()


def synthetic_batch(batch_size: int, device: torch.device):
    data = torch.randn(batch_size, 3, 224, 224, device=device)
    target = torch.randint(0, 1000, (batch_size,), device=device)
    return data, target
