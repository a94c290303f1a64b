"""Planted fault: the device module reports no devices."""

import torch

torch.cpu.device_count = lambda: 0
