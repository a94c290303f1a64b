"""A planted fault for exit-code tests: device->host copies of float tensors come back off by one.

Used as a manifest's backend_import with device_name "cpu": importing it breaks Tensor.cpu the
way a buggy backend's copy kernel would, so the copy round-trip case must fail.
"""

import torch

_real_cpu = torch.Tensor.cpu


def _corrupt_cpu(self, *args, **kwargs):
    out = _real_cpu(self, *args, **kwargs)
    return out.clone() + 1 if out.is_floating_point() and out.numel() else out


torch.Tensor.cpu = _corrupt_cpu
