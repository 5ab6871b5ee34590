/** Unit tests of the CUDA guards (src/model/guards.ts): which code runs only when CUDA (or MPS) is present. */
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { parsePython, type Node } from '../src/core/parse';
import { Semantics } from '../src/core/semantics';
import { ProgramModel } from '../src/model';
import { cudaOnly, mpsOnly, tpuTruth } from '../src/model/guards';

beforeAll(async () => {
  await init();
});

/** The innermost node spelled `expr` on the line marked `# <-`. */
function at(src: string, expr: string): { model: ProgramModel; node: Node } {
  const sema = new Semantics(parsePython(src), src);
  const model = new ProgramModel(sema, 'x.py');
  const lines = src.split('\n');
  const marked = lines.findIndex((l) => l.includes('# <-'));
  if (marked < 0) throw new Error('no marker');
  const base = src.indexOf(expr, lines.slice(0, marked).join('\n').length);
  if (base < 0) throw new Error(`no ${expr}`);
  let n: Node | null = sema.root.descendantForIndex(base, base + expr.length - 1);
  while (n && n.text !== expr) n = n.parent;
  if (!n) throw new Error(`no node ${expr}`);
  return { model, node: n };
}

const guarded = (src: string, expr: string) => {
  const { model, node } = at(src, expr);
  return cudaOnly(node, model);
};

describe('cudaOnly', () => {
  it('an if body, the else of a negated check, the CUDA arm of a ternary', () => {
    expect(guarded('import torch\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()  # <-\n', 'torch.cuda.empty_cache()')).toBe(true);
    expect(guarded('import torch\nif not torch.cuda.is_available():\n    pass\nelse:\n    torch.cuda.empty_cache()  # <-\n', 'torch.cuda.empty_cache()')).toBe(true);
    expect(guarded('import torch\ns = torch.cuda.get_rng_state() if torch.cuda.is_available() else None  # <-\n', 'torch.cuda.get_rng_state()')).toBe(true);
    // the other arm is what a TPU host runs
    expect(guarded('import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"  # <-\n', '"cpu"')).toBe(false);
    expect(guarded('import torch\nif not torch.cuda.is_available():\n    x = 1  # <-\n', 'x = 1')).toBe(false);
  });

  it('the statements after an early return, continue or break on a no-CUDA check; not after a raise', () => {
    const ret = 'import torch\ndef peak():\n    if not torch.cuda.is_available():\n        return None\n    return torch.cuda.max_memory_allocated()  # <-\n';
    expect(guarded(ret, 'torch.cuda.max_memory_allocated()')).toBe(true);
    const loop = 'import torch\nfor d in ds:\n    if torch.cuda.device_count() == 0:\n        continue\n    torch.cuda.synchronize()  # <-\nprint(1)\n';
    expect(guarded(loop, 'torch.cuda.synchronize()')).toBe(true);
    // after the loop, not guarded
    expect(guarded('import torch\nfor d in ds:\n    if not torch.cuda.is_available():\n        continue\nprint(1)  # <-\n', 'print(1)')).toBe(false);
    // a raise or a failed assert stops the program: the code after it is the only path, still to migrate
    expect(guarded('import torch\nif not torch.cuda.is_available():\n    raise SystemExit("GPU")\ntorch.cuda.set_device(0)  # <-\n', 'torch.cuda.set_device(0)')).toBe(false);
    expect(guarded('import torch\nassert torch.cuda.is_available()\ntorch.cuda.set_device(0)  # <-\n', 'torch.cuda.set_device(0)')).toBe(false);
    // a statement before the exit
    expect(guarded('import torch\ndef f():\n    torch.cuda.synchronize()  # <-\n    if not torch.cuda.is_available():\n        return\n', 'torch.cuda.synchronize()')).toBe(false);
  });

  it('MPS-only branches, elif after a CUDA arm, and/or short-circuits', () => {
    const chain = 'import torch\nif torch.cuda.is_available():\n    a = 1\nelif torch.backends.mps.is_available():\n    b = 2  # <-\nelse:\n    c = 3\n';
    expect(guarded(chain, 'b = 2')).toBe(true);
    expect(mpsOnly(at(chain, 'b = 2').node, at(chain, 'b = 2').model)).toBe(true);
    const other = chain.replace('b = 2  # <-', 'b = 2').replace('c = 3', 'c = 3  # <-');
    expect(guarded(other, 'c = 3')).toBe(false);
    // the CUDA arm is CUDA-only, not MPS-only
    const cudaArm = chain.replace('b = 2  # <-', 'b = 2').replace('a = 1', 'a = 1  # <-');
    expect(mpsOnly(at(cudaArm, 'a = 1').node, at(cudaArm, 'a = 1').model)).toBe(false);
    expect(guarded('import torch\nif x.device.type == "mps":\n    y = 1  # <-\n', 'y = 1')).toBe(true);
    expect(guarded('import torch\nok = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8  # <-\n', 'torch.cuda.get_device_capability()')).toBe(true);
    expect(guarded('import torch\nok = fast or torch.cuda.get_device_capability()[0] >= 8  # <-\n', 'torch.cuda.get_device_capability()')).toBe(false);
    expect(guarded('import torch\nif args.cuda and torch.cuda.is_available():\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(true);
  });

  it('flags read through the program model, not by their names', () => {
    expect(guarded('import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(true);
    expect(guarded('import torch\nuse_cuda = not args.no_cuda and torch.cuda.is_available()\nif use_cuda:\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(true);
    expect(guarded('import torch\nflag = True if torch.cuda.is_available() else False\nif flag:\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(true);
    // True on an XLA device too (YOLOv5): no CUDA-only flag, whatever its name
    expect(guarded('import torch\ncuda = device.type != "cpu"\nif cuda:\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(false);
    // a flag rebound to something unknown on another path
    expect(guarded('import torch\ngo = torch.cuda.is_available()\nif args.force:\n    go = decide()\nif go:\n    torch.cuda.manual_seed(0)  # <-\n', 'torch.cuda.manual_seed(0)')).toBe(false);
    expect(guarded('import torch\nclass T:\n    def __init__(self):\n        self.on_gpu = torch.cuda.is_available()\n    def f(self):\n        if self.on_gpu:\n            torch.cuda.synchronize()  # <-\n', 'torch.cuda.synchronize()')).toBe(true);
    // an attribute with an unrelated binding (`args.distributed = False` then `= int(...) > 1`) is no guard
    expect(guarded('import torch\nargs.distributed = False\nargs.distributed = int(ws) > 1\nif args.distributed:\n    torch.cuda.set_device(0)  # <-\n', 'torch.cuda.set_device(0)')).toBe(false);
  });

  it('a function whose every call site is guarded', () => {
    const src = 'import torch\ndef stats():\n    return torch.cuda.max_memory_allocated()  # <-\nif torch.cuda.is_available():\n    print(stats())\n';
    expect(guarded(src, 'torch.cuda.max_memory_allocated()')).toBe(true);
    const mixed = src + 'print(stats())\n';
    expect(guarded(mixed, 'torch.cuda.max_memory_allocated()')).toBe(false);
    // passed as a value: its callers are unknown
    const cb = src + 'hooks.append(stats)\n';
    expect(guarded(cb, 'torch.cuda.max_memory_allocated()')).toBe(false);
    // no call site at all
    expect(guarded('import torch\ndef stats():\n    return torch.cuda.max_memory_allocated()  # <-\n', 'torch.cuda.max_memory_allocated()')).toBe(false);
  });
});

describe('tpuTruth', () => {
  const truth = (src: string, expr: string) => {
    const { model, node } = at(src, expr);
    return tpuTruth(node, model);
  };
  it('probes, device counts and device types', () => {
    expect(truth('import torch\nx = torch.cuda.is_available()  # <-\n', 'torch.cuda.is_available()')).toBe(false);
    expect(truth('import torch\nx = not torch.backends.mps.is_available()  # <-\n', 'not torch.backends.mps.is_available()')).toBe(true);
    expect(truth('import torch\nx = torch.cuda.device_count() > 1  # <-\n', 'torch.cuda.device_count() > 1')).toBe(false);
    expect(truth('import torch\nx = torch.cuda.device_count() == 0  # <-\n', 'torch.cuda.device_count() == 0')).toBe(true);
    expect(truth('import torch\nx = device.type == "cuda"  # <-\n', 'device.type == "cuda"')).toBe(false);
    expect(truth('import torch\nx = device.type != "cpu"  # <-\n', 'device.type != "cpu"')).toBe(null);
    expect(truth('import torch\nx = "cuda" in str(device)  # <-\n', '"cuda" in str(device)')).toBe(false);
    expect(truth('import torch\nx = is_main and torch.cuda.is_available()  # <-\n', 'is_main and torch.cuda.is_available()')).toBe(false);
    expect(truth('import torch\nx = is_main or torch.cuda.is_available()  # <-\n', 'is_main or torch.cuda.is_available()')).toBe(null);
  });
});
