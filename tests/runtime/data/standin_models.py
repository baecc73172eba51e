"""Stand-in for torchvision.models in the copy of Horovod's synthetic benchmark: torchvision does not
import beside this torch. `small_cnn` takes the benchmark's 3x224x224 images and gives 1000 classes."""

import torch.nn as nn


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=7, stride=4, padding=3), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, 1000))
