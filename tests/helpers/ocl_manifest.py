"""TorchCTS manifest for the real backend test (tests/real_backends/test_real_backend_ocl.py): pytorch_ocl, the
OpenCL PrivateUse1 backend of ../shared/backends, on PoCL's CPU device. float32 only (PoCL has no
fp16), forward values and training; its known bugs are the test's ledger, not expectations here, so
every failure of the run is judged by that test.
"""

import torch

manifest = {
    "manifest_version": 1,
    # The runtime device type: cpu, cuda (also ROCm), mps, xpu, or the name your PrivateUse1
    # backend registers (see `torchcts backends`); run with the same --device.
    "device_name": 'ocl',
    # The module that registers the device (None for in-tree devices).
    "backend_import": 'pytorch_ocl',
    # Dtypes the backend supports; absent or False means not claimed.
    "supported_dtypes": {torch.float32: True},
    # The semantic level the backend claims (1..8); the default for --level.
    "semantic_level": 4,
    "device_count": 1,
    "capabilities": {
        'inference': True,  # forward values of operators match the CPU reference
        'training': True,  # backward passes and optimizer steps match the CPU reference
        'rng': False,  # seeded random generation is reproducible and well distributed
        'device_api': False,  # torch.<device> module: availability, counts, current device, synchronize
        'multi_device': False,  # more than one device index; copies and ops across indices
        'autograd': True,  # autograd on device tensors (gradients, hooks, version counters)
        'double_backward': False,  # gradients of gradients
        'serialization': False,  # torch.save / torch.load round trips of device tensors
        'channels_last': False,  # channels_last memory formats preserved by ops
        'ieee754': False,  # NaN and Inf semantics as on CPU
        'compile': False,  # torch.compile on the device
        'autocast': False,  # torch.autocast regions on the device
        'streams': False,  # device streams
        'events': False,  # device events
        'pinned_memory': False,  # pinned host memory
        'ipc': False,  # device tensors shared between processes through torch.multiprocessing (a queue)
        'profiler': False,  # torch.profiler records the device's ops by name, in program order (CPU-side events)
        'profiler_device': False,  # torch.profiler records device-side events (kernels) under the device's ProfilerActivity
        'profiler_memory': False,  # torch.profiler's profile_memory records the device's allocations and frees
        'sparse': False,  # sparse tensor layouts
        'nested': False,  # nested tensors
        'foreach': False,  # torch._foreach_* kernels
        'deterministic': False,  # deterministic algorithms and no stale data between allocations
        'fp8': False,  # float8 dtypes
        'distributed': False,  # torch.distributed collectives and DDP through the c10d backend named by distributed_backend
    },
    # Known failures, e.g. {"match": "opinfo/atan2/float16/*", "status": "xfail", "reason": "...",
    #                       "tracker": "BUG-123", "expires": "2027-06-30"}
    "expectations": [],
    # Per category and dtype, e.g. {"reduction": {torch.float16: {"atol": 1e-3, "rtol": 1e-2}}}
    "tolerance_overrides": {},
    "seed": 0,
    "resource_limits": {"max_tensor_mb": 256, "max_device_memory_mb": 4096},
    # The c10d backend the distributed suite initialises (the name your backend passes to
    # torch.distributed.Backend.register_backend); None: PyTorch's default for the device type.
    "distributed_backend": None,
}
