/**
 * `tensor.pin_memory()` without a CUDA device (TPU401). PyTorch pins through a device allocator: up to 2.4 the
 * BackendSelect kernel redispatches `_pin_memory` to `device.value_or(at::kCUDA)` (CPU builds have no CUDA kernel:
 * NotImplementedError "Could not run 'aten::_pin_memory' with arguments from the 'CUDA' backend", run here on CPU torch 1.13;
 * CUDA builds allocate with `at::cuda::getPinnedMemoryAllocator()`, which needs a driver); later versions ask
 * `getAcceleratorHooksInterface(...).getPinnedMemoryAllocator()` (aten/src/ATen/native/Memory.cpp), and torch_xla
 * up to pytorch/xla@41398bf registers no accelerator hooks, so a TPU host has no pinned allocator either way.
 */
export const PIN_RAISES =
  '`.pin_memory()` raises on a TPU host: PyTorch pins through the CUDA (or accelerator) pinned-memory allocator, and torch_xla provides none; drop it or guard it with `torch.cuda.is_available()`';

export const PIN_RAISES_TORCHTPU =
  '`.pin_memory()` raises without a CUDA device (PyTorch pins through the CUDA or accelerator allocator); whether TorchTPU provides one is not documented: drop it or guard it with `torch.cuda.is_available()`';
