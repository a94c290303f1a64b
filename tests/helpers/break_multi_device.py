"""Planted fault: the device module claims two devices but every tensor lands on the same one."""

import torch

torch.cpu.device_count = lambda: 2
