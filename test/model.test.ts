/** Unit tests of the program model (src/model): abstract values of expressions in small programs. */
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { parsePython, type Node } from '../src/core/parse';
import { Semantics } from '../src/core/semantics';
import { ProgramModel, type CallResolver, type Value } from '../src/model';

beforeAll(async () => {
  await init();
});

function build(src: string): { model: ProgramModel; sema: Semantics } {
  const sema = new Semantics(parsePython(src), src);
  return { model: new ProgramModel(sema, 'x.py'), sema };
}

/** The node whose text is `expr` on the line marked `# <-` (or the last occurrence in the file). */
function at(src: string, expr: string): { model: ProgramModel; node: Node } {
  const { model, sema } = build(src);
  const marked = src.split('\n').findIndex((l) => l.includes('# <-'));
  const lineStart = marked >= 0 ? src.split('\n').slice(0, marked).join('\n').length + (marked ? 1 : 0) : 0;
  const base = marked >= 0 ? src.indexOf(expr, lineStart) : src.lastIndexOf(expr);
  if (base < 0) throw new Error(`no ${expr}`);
  let n: Node | null = sema.root.descendantForIndex(base, base + expr.length - 1);
  while (n && n.text !== expr) n = n.parent;
  if (!n) throw new Error(`no node ${expr}`);
  return { model, node: n };
}

function valueOf(src: string, expr: string): Value {
  const { model, node } = at(src, expr);
  return model.value(node);
}

const summary = (v: Value): string => {
  switch (v.kind) {
    case 'tensor':
      return `${v.where}-tensor${v.where === 'device' ? `:${v.device}` : ''}${v.weak ? '?' : ''}`;
    case 'device':
      return `device:${v.device}`;
    case 'string':
      return `string:${v.values.join('|')}`;
    case 'number':
      return `number${v.rank ? ':rank' : ''}${v.value !== undefined ? `=${v.value}` : ''}`;
    case 'dtype':
      return `dtype:${v.name}`;
    case 'loader':
      return `loader:${v.device}`;
    default:
      return v.kind;
  }
};

const sv = (src: string, expr: string) => summary(valueOf(src, expr));

describe('tensors: host and device', () => {
  it('a registered buffer is a device tensor (it moves with its module); a plain host attribute stays host', () => {
    const src = [
      'import torch',
      'class Q(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__()',
      '        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))',
      '        self.register_buffer("mask", None)',
      '        self.table = torch.zeros(3)',
      '    def forward(self, x):',
      '        use(self.ptr, self.table, self.mask)',
    ].join('\n');
    expect(sv(src, 'self.ptr')).toBe('device-tensor:unknown');
    expect(sv(src, 'self.table')).toBe('host-tensor');
    expect(sv(src, 'self.mask')).not.toMatch(/device/);
  });

  it('follows .cpu(), .item(), factories without a device, and moves', () => {
    const src = [
      'import torch',
      'device = torch.device("cuda")',
      'x = torch.randn(4, 4).to(device)',
      'h = x.cpu()',
      'n = x.sum().item()',
      'p = torch.randperm(10)',
      't = torch.tensor([n, n])',
      'z = torch.zeros(3, device=device)',
      'print(x, h, n, p, t, z, p.tolist())',
    ].join('\n');
    const last = (e: string) => sv(src + '\nuse(' + e + ')', e);
    expect(last('x')).toBe('device-tensor:cuda');
    expect(last('h')).toBe('host-tensor');
    expect(last('n')).toBe('number');
    expect(last('p')).toBe('host-tensor');
    expect(last('t')).toBe('host-tensor');
    expect(last('z')).toBe('device-tensor:cuda');
    expect(last('p.tolist()')).toBe('seq');
    const norm = 'import torch\nfrom torch.nn.utils import clip_grad_norm_\ng = clip_grad_norm_(model.parameters(), 1.0)\nuse(g)';
    expect(sv(norm, 'g')).toBe('device-tensor:unknown');
    expect(sv('import torch\nm = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2))\nuse(m)', 'm')).toBe('module');
    const { model, node } = at(src + '\nuse(p.tolist())', 'p.tolist()');
    expect(model.isHost(node)).toBe(true);
  });

  it('respects a host value bound on the line before, and the join elsewhere', () => {
    const src = [
      'import torch',
      'def f(model, loader):',
      '    for x, y in loader:',
      '        out = model(x)',
      '        v = out.cpu()',
      '        k = int(v[0])  # <-',
      '        v = out',
    ].join('\n');
    // `v = out.cpu()` runs before the read on every iteration: the later `v = out` never reaches it
    expect(sv(src, 'v[0]')).toBe('host-tensor');
    expect(sv(src + '\n        use(out)', 'out')).toBe('device-tensor:unknown');
    // a binding after the read, inside the loop, reaches it through the back edge: the join
    const carried = src.replace('        v = out.cpu()\n', '').replace('def f(model, loader):', 'def f(model, loader):\n    v = torch.zeros(1)');
    expect(sv(carried, 'v[0]')).toBe('device-tensor:unknown');
  });

  it('loader batches are device tensors whose parts can be unpacked; enumerate gives an int index', () => {
    const src = [
      'import torch',
      'from torch.utils.data import DataLoader',
      'loader = DataLoader(ds, batch_size=8)',
      'for i, (x, y) in enumerate(loader):',
      '    use(i, x, y)  # <-',
    ].join('\n');
    expect(sv(src, 'i')).toBe('number');
    expect(sv(src, 'x')).toBe('device-tensor:unknown');
    expect(sv(src + '\nuse(loader)', 'loader')).toBe('loader:unknown');
    const v = valueOf(src, 'x');
    expect(v.kind === 'tensor' && v.batch).toBe(true);
  });

  it('counters and clocks are Python numbers; accumulating a loss makes a tensor', () => {
    const src = [
      'import time, torch',
      'step = 0',
      'total = 0.0',
      't0 = time.time()',
      'for x in loader:',
      '    loss = model(x)',
      '    total += loss',
      '    step += 1',
      'use(step, total, t0)',
    ].join('\n');
    expect(sv(src + '\nuse(step)', 'step')).toBe('number');
    expect(sv(src + '\nuse(total)', 'total')).toBe('device-tensor:unknown');
    expect(sv(src + '\nuse(t0)', 't0')).toBe('number');
  });
});

describe('inter-procedural', () => {
  it('a helper returning a Python float is host; one returning a device tensor is not', () => {
    const src = [
      'import torch',
      'def evaluate(model, loader):',
      '    correct = 0',
      '    for x, y in loader:',
      '        correct += (model(x).argmax(1) == y).sum().item()',
      '    return correct / len(loader)',
      'def mean_loss(losses):',
      '    return torch.stack(losses).mean()',
      'acc = evaluate(model, val_loader)',
      'ml = mean_loss(ls)',
      'use(acc, ml)',
    ].join('\n');
    expect(sv(src + '\nuse(acc)', 'acc')).toBe('number');
    expect(sv(src + '\nuse(ml)', 'ml').startsWith('device-tensor')).toBe(true);
  });

  it('call-site arguments flow into parameters and beat the default', () => {
    const src = [
      'import torch',
      'def train(model, device=torch.device("cuda")):',
      '    x = torch.ones(2).to(device)  # <-',
      '    return x',
      'train(net, torch.device("cpu"))',
    ].join('\n');
    expect(sv(src, 'device')).toBe('device:cpu');
    expect(sv(src, 'torch.ones(2).to(device)')).toBe('host-tensor');
    const noCall = src.split('\n').slice(0, 4).join('\n');
    expect(sv(noCall, 'device')).toBe('device:cuda');
    const rank = 'import torch\nLOCAL_RANK = 0\ndef train(device):\n    use(device)  # <-\ntrain(torch.device("cuda", LOCAL_RANK))\n';
    expect(sv(rank, 'device')).toBe('device:cuda');
  });

  it('methods reached through self, and a plugged-in resolver', () => {
    const src = [
      'import torch',
      'class Trainer:',
      '    def norm(self, t):',
      '        return t.norm().item()',
      '    def step(self, loss):',
      '        g = self.norm(loss)  # <-',
    ].join('\n');
    expect(sv(src, 'self.norm(loss)')).toBe('number');
    const other = build('def helper():\n    return 3\n');
    const otherDef = other.sema.nodes('function_definition')[0];
    const { model, node } = at('from util import helper\nv = helper()  # <-\n', 'helper()');
    expect(summary(model.value(node))).toBe('unknown');
    const resolver: CallResolver = (call) => (call.text === 'helper()' ? { def: otherDef, model: other.model, path: 'util.py' } : null);
    const fresh = at('from util import helper\nv = helper()  # <-\n', 'helper()');
    fresh.model.addResolver(resolver);
    // `helper` is an import (util.helper) the library table does not know: the plugged-in (project) resolver answers
    expect(summary(fresh.model.value(fresh.node))).toBe('number=3');
    const local = at('v = helper()  # <-\n', 'helper()');
    local.model.addResolver(resolver);
    expect(summary(local.model.value(local.node))).toBe('number=3');
  });
});

describe('attributes, argparse and config', () => {
  it('argparse defaults and attribute assignments', () => {
    const src = [
      'import argparse, torch',
      'parser = argparse.ArgumentParser()',
      "parser.add_argument('--device', default='cuda')",
      "parser.add_argument('--local_rank', type=int, default=-1)",
      "parser.add_argument('--amp-dtype', dest='amp_dtype', default='float16')",
      'args = parser.parse_args()',
      "args.dist_backend = 'nccl'",
      'use(args.device, args.local_rank, args.dist_backend, args.amp_dtype)',
    ].join('\n');
    const u = (e: string) => sv(src + `\nuse(${e})`, e);
    expect(u('args.device')).toBe('string:cuda');
    expect(u('args.local_rank')).toBe('number=-1');
    expect(u('args.dist_backend')).toBe('string:nccl');
    expect(u('args.amp_dtype')).toBe('string:float16');
  });

  it('self attributes, dict entries with constant keys and class-level config fields', () => {
    const src = [
      'import torch',
      'class Cfg:',
      '    device: str = "cuda"',
      '    dtype = torch.float16',
      'cfg = Cfg()',
      'conf = {"device": "cuda:0", "lr": 0.1}',
      'conf["dtype"] = torch.bfloat16',
      'class M:',
      '    def __init__(self):',
      '        self.local_rank = int(os.environ["LOCAL_RANK"])',
      '        self.dev = torch.device("cuda", self.local_rank)',
      '    def run(self, x):',
      '        use(self.dev, x.to(self.local_rank))  # <-',
      'use(cfg.device, Cfg.dtype, conf["device"], conf["dtype"], conf["lr"])',
    ].join('\n');
    expect(sv(src, 'self.dev')).toBe('device:cuda');
    expect(sv(src, 'x.to(self.local_rank)')).toBe('device-tensor:cuda');
    const u = (e: string) => sv(src + `\nuse(${e})`, e);
    expect(u('cfg.device')).toBe('string:cuda');
    expect(u('Cfg.dtype')).toBe('dtype:float16');
    expect(u('conf["device"]')).toBe('string:cuda:0');
    expect(u('conf["dtype"]')).toBe('dtype:bfloat16');
    expect(u('conf["lr"]')).toBe('number=0.1');
  });

  it('a device chosen at run time, and XLA devices and loaders', () => {
    const src = [
      'import torch',
      'import torch_xla',
      'import torch_xla.distributed.parallel_loader as pl',
      'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
      'xdev = torch_xla.device()',
      'ml = pl.MpDeviceLoader(loader, xdev)',
      'for b in ml:',
      '    use(b)  # <-',
      'use(dev, xdev)',
    ].join('\n');
    expect(sv(src, 'b')).toBe('device-tensor:xla');
    expect(sv(src + '\nuse(dev)', 'dev')).toBe('device:runtime');
    expect(sv(src + '\nuse(xdev)', 'xdev')).toBe('device:xla');
  });

  it('comprehension targets are local to the comprehension; host lists give host elements', () => {
    const src = [
      'import torch',
      'vals = [l.item() for l in losses]',
      'names = ["a", "b"]',
      'for n in names:',
      '    use(n)  # <-',
      'use(vals)',
    ].join('\n');
    expect(sv(src, 'n')).toBe('string:a|b');
    expect(sv(src + '\nuse(vals)', 'vals')).toBe('seq');
    const { model, node } = at(src + '\nuse(vals)', 'vals');
    expect(model.isHost(node)).toBe(true);
  });

  it('stays bounded on deep and cyclic bindings', () => {
    const lines = ['import torch', 'a0 = torch.zeros(1).cuda()'];
    for (let i = 1; i < 400; i++) lines.push(`a${i} = a${i - 1} + 1`);
    lines.push('x = y', 'y = x', 'use(a399, x)');
    const src = lines.join('\n');
    const t0 = performance.now();
    expect(['device-tensor:cuda', 'unknown']).toContain(sv(src + '\nuse(a399)', 'a399'));
    expect(sv(src + '\nuse(x)', 'x')).toBe('unknown');
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('namesCuda: where a device value lives, from the model (replaces the CUDA name-set heuristics)', () => {
  const cuda = (src: string, expr: string) => {
    const { model, node } = at(src, expr);
    return model.namesCuda(node);
  };
  it('a CUDA-or-CPU choice at run time names CUDA; a choice with an XLA arm does not', () => {
    expect(cuda('import torch\nd = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('import torch, torch_xla\nd = torch_xla.device() if use_tpu else torch.device("cuda")\nx.to(d)\n', 'd')).toBe(false);
    expect(cuda('import torch\nd = torch.device("xla" if use_tpu else "cuda")\nx.to(d)\n', 'd')).toBe(false);
  });
  it('formatted CUDA ordinals and torch.cuda.current_device()', () => {
    expect(cuda('d = "cuda:%d" % rank\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('d = "cuda:{}".format(rank)\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('d = f"cuda:{rank}"\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('d = f"cuda"\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('d = "%s:%d" % (kind, rank)\nx.to(d)\n', 'd')).toBe(false);
    expect(cuda('import torch\nif a:\n    arg = "cuda:0"\nelif b:\n    arg = "mps"\nelse:\n    arg = "cpu"\nd = torch.device(arg)\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('import torch\nd = torch.cuda.current_device()\nx.to(d)\n', 'd')).toBe(true);
    expect(cuda('import torch.distributed as dist\nd = dist.get_rank()\nx.to(d)\n', 'd')).toBe(false);
  });
  it('follows the receiver of an attribute and the callers of a parameter, not the spelling of a name', () => {
    const src = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--device", default="cuda")\nargs = p.parse_args()\nx.to(args.device)\n';
    expect(cuda(src, 'args.device')).toBe(true);
    // another class's `self.device` is not this one's
    const cls = 'class A:\n    def __init__(self):\n        self.device = "cuda"\nclass B:\n    def __init__(self, d):\n        self.device = d\n    def run(self, x):\n        return x.to(self.device)  # <-\nB(torch_xla.device())\n';
    expect(cuda(cls, 'self.device')).toBe(false);
    // a CUDA default that every caller overrides with the XLA device
    const param = 'import torch_xla\ndef train(x, device="cuda"):\n    return x.to(device)  # <-\ntrain(x, torch_xla.device())\n';
    expect(cuda(param, 'device')).toBe(false);
    expect(cuda('def train(x, device="cuda"):\n    return x.to(device)  # <-\n', 'device')).toBe(true);
    // a local helper that returns a CUDA device
    expect(cuda('import torch\ndef pick():\n    return torch.device("cuda", 0)\nd = pick()\nx.to(d)\n', 'd')).toBe(true);
  });
});

describe('the per-file budget inside the model', () => {
  it('stops model queries once the armed budget is spent (BudgetExceeded, not a silent run)', async () => {
    const { arm, disarm, BudgetExceeded } = await import('../src/core/budget');
    const lines = ['x0 = torch.zeros(4)'];
    for (let i = 1; i < 3000; i++) lines.push(`x${i} = x${i - 1} + 1`);
    const src = `import torch\n${lines.join('\n')}\n`;
    const ask = (armed: boolean) => {
      const { model, sema } = build(src);
      const ids = [...sema.nodes('identifier')]; // listed before the budget is armed: only model queries run under it
      const prev = armed ? arm(performance.now() - 1, undefined) : null; // a deadline already past
      try {
        for (const n of ids) model.value(n);
      } finally {
        if (armed) disarm(prev);
      }
    };
    expect(() => ask(false)).not.toThrow();
    expect(() => ask(true)).toThrow(BudgetExceeded);
  });
});
