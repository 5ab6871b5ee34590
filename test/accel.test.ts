/**
 * Runs the generated accel module and dual-path-fixed programs with CPU PyTorch (Debian's python3-torch,
 * PyTorch 1.13, at /usr/bin/python3 or $TPU_READY_PYTHON). Off XLA every accel function must do what the
 * code it replaced did; a fixed program must give the same losses and checkpoint dtypes as the unfixed one.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { accelModuleSource, ACCEL_FUNCTIONS } from '../src/core/accel';
import { analysedText, fixDocument, pythonDocument } from '../src/core/engine';
import { DEFAULT_OPTIONS } from '../src/core/types';
import { RULES } from '../src/rules';
import { parsePython } from '../src/core/parse';

const PYTHON = process.env.TPU_READY_PYTHON ?? '/usr/bin/python3';

function tmpProject(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-ready-accel-'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

/** Runs a script; returns stdout, stderr and the exit status (the child env drops ACCEL_BACKEND, LOCAL_RANK, RANK, WORLD_SIZE unless given). */
function run(dir: string, script: string, args: string[] = [], env: Record<string, string> = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ACCEL_BACKEND|LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|TORCHELASTIC_RUN_ID)$/.test(k)));
  const r = spawnSync(PYTHON, [script, ...args], { cwd: dir, env: { ...base, PYTHONDONTWRITEBYTECODE: '1', ...env }, encoding: 'utf8', timeout: 120_000 });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status };
}

function lastJson(stdout: string): any {
  const line = stdout.trim().split('\n').filter((l) => l.startsWith('{') || l.startsWith('[')).pop();
  if (!line) throw new Error(`no JSON in output:\n${stdout}`);
  return JSON.parse(line);
}

beforeAll(async () => {
  await init();
  // fail loudly when the CPU PyTorch the suite relies on is missing
  execFileSync(PYTHON, ['-c', 'import torch'], { stdio: 'pipe' });
});

// --------------------------------------------------------------------------------------------------
// The accel module itself, every function on CPU

const EXERCISE = String.raw`
import collections, json, os, sys, warnings
import torch
import accel

out = {}
out["backend"] = accel.backend()
out["device"] = str(accel.device())
out["device_type"] = accel.device_type()
out["is_xla"] = accel.is_xla()
out["world_size"], out["rank"], out["local_rank"], out["is_master"] = accel.world_size(), accel.rank(), accel.local_rank(), accel.is_master()

# ACCEL_BACKEND: any case accepted, anything else refused with a message naming it
errors = {}
for value in ["CPU", " Cpu ", "bogus", "xla", "TPU", "cuda"]:
    os.environ["ACCEL_BACKEND"] = value
    try:
        errors[value] = accel.backend()
    except (ValueError, RuntimeError) as e:
        errors[value] = type(e).__name__ + ": " + str(e)
del os.environ["ACCEL_BACKEND"]
out["forced"] = errors

# loaders: on CPU the loader itself; the moving wrapper keeps batch types and the loader's attributes
Batch = collections.namedtuple("Batch", "x y")
class Pairs(list):
    pass
loader = [Batch(torch.ones(2), torch.zeros(2)), {"x": torch.ones(1), "meta": "m"},
          collections.OrderedDict(a=torch.ones(1)), collections.defaultdict(list, a=torch.ones(1)),
          Pairs([torch.ones(1), 3]), (torch.ones(1), [torch.zeros(1)]), torch.return_types.max((torch.ones(1), torch.zeros(1)))]
out["wrap_cpu_is_loader"] = accel.wrap_loader(loader) is loader
dl = torch.utils.data.DataLoader(list(range(6)), batch_size=2)
moving = accel._MovingLoader(dl, torch.device("cpu"))
out["moving_len"] = len(moving)
out["moving_attrs"] = [moving.batch_size, len(moving.dataset)]
moved = list(accel._MovingLoader(loader, torch.device("cpu")))
out["moved_types"] = [type(b).__name__ for b in moved]
out["namedtuple_fields"] = [moved[0].x.tolist(), moved[0].y.tolist()]
out["dict_meta"] = moved[1]["meta"]
out["moved_max"] = [type(moved[6]).__name__, moved[6].values.tolist()]

# autocast: off XLA exactly torch.autocast(device_type, ...): CUDA autocast disables itself on a CPU host
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ac = accel.autocast(dtype=torch.float16)
    with ac:
        r = torch.mm(torch.ones(2, 2), torch.ones(2, 2))
out["autocast_cuda_on_cpu"] = [type(ac).__name__, ac.device, ac._enabled, str(r.dtype), any("CUDA is not available" in str(x.message) for x in w)]
with accel.autocast(dtype=torch.bfloat16, device_type="cpu"):
    r = torch.mm(torch.ones(2, 2), torch.ones(2, 2))
out["autocast_cpu_bf16"] = str(r.dtype)
with accel.autocast(dtype=torch.bfloat16, device_type="cpu", enabled=False):
    r = torch.mm(torch.ones(2, 2), torch.ones(2, 2))
out["autocast_disabled"] = str(r.dtype)
@accel.autocast(dtype=torch.bfloat16, device_type="cpu")
def decorated(a):
    return torch.mm(a, a)
out["autocast_decorator"] = str(decorated(torch.ones(2, 2)).dtype)

# save: master_only follows xm.save (each host's local master), master_only=False writes on every caller
def wrote(name, **env):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        p = os.path.join(sys.argv[1], name)
        accel.save({"w": torch.ones(1)}, p, **kw)
        return os.path.exists(p)
    finally:
        for k, v in saved.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v
kw = {}
out["save_default"] = wrote("a.pt")
out["save_local1"] = wrote("b.pt", LOCAL_RANK="1")
kw = {"master_only": False}
out["save_all_local1"] = wrote("c.pt", LOCAL_RANK="1")
kw = {"global_master": True}
out["save_global_rank1"] = wrote("d.pt", RANK="1", LOCAL_RANK="0")
out["save_global_rank0"] = wrote("e.pt", RANK="0", LOCAL_RANK="0")
out["saved_dtype"] = str(torch.load(os.path.join(sys.argv[1], "a.pt"))["w"].dtype)

# launch: one process runs in place and leaves the environment alone (a -1 LOCAL_RANK sentinel stays -1)
seen = []
accel.launch(lambda i, a: seen.append((i, a)), args=("x",))
out["launch_inplace"] = [seen, int(os.getenv("LOCAL_RANK", -1))]

# the rest, on CPU
torch.manual_seed(3); a = torch.rand(2)
accel.manual_seed(3); b = torch.rand(2)
out["manual_seed"] = torch.equal(a, b)
calls = []
accel.add_step_closure(lambda *xs: calls.append(xs), args=(1, 2))
out["step_closure"] = calls
accel.sync(); accel.sync(wait=True)
accel.initialize_cache("/nonexistent/cache")
out["memory_info"] = accel.memory_info()
p = torch.nn.Parameter(torch.ones(1)); opt = torch.optim.SGD([p], lr=1.0); p.grad = torch.ones(1)
accel.optimizer_step(opt)
out["optimizer_step"] = p.item()
accel.master_print("printed-by-master")

# torch_xla's branches against a stand-in (the XLA emulation tests the real signatures): get_memory_info keys per version
class FakeXm:
    info = None
    saved = None
    def get_memory_info(self, dev):
        if isinstance(self.info, Exception): raise self.info
        return self.info
    def save(self, obj, path, master_only=True, global_master=False):
        self.saved = (master_only, global_master)
class FakeTx:
    def device(self): return "xla:0"
accel.torch_xla, accel.xm = FakeTx(), FakeXm()
mem = {}
for label, info in [("2.3", {"kb_free": 1, "kb_total": 3}), ("2.4", {"bytes_used": 5, "bytes_limit": 9}),
                    ("2.6", {"bytes_used": 5, "bytes_limit": 9, "peak_bytes_used": 7}),
                    ("2.3-pjrt", RuntimeError("GetMemoryInfo not implemented"))]:
    accel.xm.info = info
    mem[label] = accel.memory_info()
out["xla_memory_info"] = mem
accel.save({}, "unused.pt", master_only=False)
out["xla_save_args"] = list(accel.xm.saved)
print(json.dumps(out))
`;

describe('generated accel module on CPU PyTorch', () => {
  it('defines what ACCEL_FUNCTIONS lists and nothing public besides', () => {
    const tree = parsePython(accelModuleSource());
    const defs = tree.rootNode.namedChildren.filter((n) => n?.type === 'function_definition').map((f) => f!.childForFieldName('name')!.text);
    expect(defs.filter((d) => !d.startsWith('_')).sort()).toEqual([...ACCEL_FUNCTIONS].sort());
  });

  it('runs every function with the CPU semantics of the code it replaces', () => {
    const dir = tmpProject({ 'accel.py': accelModuleSource(), 'exercise.py': EXERCISE });
    const r = run(dir, 'exercise.py', [dir]);
    expect(r.stderr).not.toMatch(/Traceback/);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('printed-by-master');
    const out = lastJson(r.stdout);
    expect(out).toMatchObject({ backend: 'cpu', device: 'cpu', device_type: 'cpu', is_xla: false, world_size: 1, rank: 0, local_rank: 0, is_master: true });
    expect(out.forced.CPU).toBe('cpu');
    expect(out.forced[' Cpu ']).toBe('cpu');
    expect(out.forced.bogus).toMatch(/^ValueError: ACCEL_BACKEND='bogus': expected one of xla, tpu, cuda, cpu/);
    expect(out.forced.xla).toMatch(/^RuntimeError: ACCEL_BACKEND=xla but torch_xla cannot be imported/);
    expect(out.forced.TPU).toMatch(/^RuntimeError: ACCEL_BACKEND=TPU but torch_tpu cannot be imported/);
    expect(out.forced.cuda).toMatch(/^RuntimeError: ACCEL_BACKEND=cuda but CUDA is not available/);

    expect(out.wrap_cpu_is_loader).toBe(true);
    expect(out.moving_len).toBe(3);
    expect(out.moving_attrs).toEqual([2, 6]);
    expect(out.moved_types).toEqual(['Batch', 'dict', 'OrderedDict', 'dict', 'Pairs', 'tuple', 'max']);
    expect(out.namedtuple_fields).toEqual([[1, 1], [0, 0]]);
    expect(out.dict_meta).toBe('m');
    expect(out.moved_max).toEqual(['max', [1]]);

    expect(out.autocast_cuda_on_cpu).toEqual(['autocast', 'cuda', false, 'torch.float32', true]);
    expect(out.autocast_cpu_bf16).toBe('torch.bfloat16');
    expect(out.autocast_disabled).toBe('torch.float32');
    expect(out.autocast_decorator).toBe('torch.bfloat16');

    expect(out).toMatchObject({ save_default: true, save_local1: false, save_all_local1: true, save_global_rank1: false, save_global_rank0: true, saved_dtype: 'torch.float32' });
    expect(out.launch_inplace).toEqual([[[0, 'x']], -1]);
    expect(out).toMatchObject({ manual_seed: true, step_closure: [[1, 2]], memory_info: {}, optimizer_step: 0 });
    expect(out.xla_memory_info).toEqual({
      '2.3': { bytes_used: 2048, bytes_limit: 3072 },
      '2.4': { bytes_used: 5, bytes_limit: 9 },
      '2.6': { bytes_used: 5, bytes_limit: 9 },
      '2.3-pjrt': {},
    });
    expect(out.xla_save_args).toEqual([false, false]);
  });

  it('launch(nprocs=2) starts two processes that see their own LOCAL_RANK/RANK/WORLD_SIZE and join a gloo group', () => {
    const script = String.raw`
import json, os, sys
import torch
import torch.distributed as dist
import accel

def worker(index, out_dir):
    env = {k: os.environ.get(k) for k in ("LOCAL_RANK", "RANK", "WORLD_SIZE")}
    dist.init_process_group("gloo", init_method="env://")
    t = torch.ones(1) * (index + 1)
    dist.all_reduce(t)
    rec = {"index": index, "env": env, "rank": accel.rank(), "local_rank": accel.local_rank(), "world": accel.world_size(),
           "device": str(accel.device()), "sum": t.item(), "master": accel.is_master()}
    del os.environ["LOCAL_RANK"]  # mp.spawn without launch: local_rank() falls back to the process-group rank
    rec["local_rank_from_group"] = accel.local_rank()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, "w%d.json" % index), "w") as f:
        json.dump(rec, f)

if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = sys.argv[2]
    accel.launch(worker, args=(sys.argv[1],), nprocs=2)
    print(json.dumps([json.load(open(os.path.join(sys.argv[1], "w%d.json" % i))) for i in range(2)]))
    print(json.dumps({"parent_local_rank": os.environ.get("LOCAL_RANK")}))
`;
    const dir = tmpProject({ 'accel.py': accelModuleSource(), 'spawn.py': script });
    const port = String(20000 + (process.pid % 20000));
    const r = run(dir, 'spawn.py', [dir, port]);
    expect(r.stderr).not.toMatch(/Traceback/);
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const workers = JSON.parse(lines[lines.length - 2]);
    expect(JSON.parse(lines[lines.length - 1])).toEqual({ parent_local_rank: null });
    expect(workers).toEqual([0, 1].map((i) => ({
      index: i, env: { LOCAL_RANK: String(i), RANK: String(i), WORLD_SIZE: '2' }, rank: i, local_rank: i, world: 2,
      device: 'cpu', sum: 3, master: i === 0, local_rank_from_group: i,
    })));
  });
});

// --------------------------------------------------------------------------------------------------
// A fixed AMP program keeps its CPU results

const AMP_PROGRAM = String.raw`import json
import os
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
local_rank = int(os.environ.get("LOCAL_RANK", 0))
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.cuda.amp.GradScaler()
x = torch.randn(64, 8)
y = torch.randn(64, 1)
losses = []
for step in range(6):
    xb, yb = x.to(device), y.to(device)
    opt.zero_grad()
    with torch.cuda.amp.autocast():
        out = model(xb)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.mse_loss(out, yb)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    losses.append(loss.item())
if local_rank == 0:
    torch.save({k: v.half() for k, v in model.state_dict().items()}, sys.argv[1])
    torch.save(model.state_dict(), sys.argv[2])
print(json.dumps({"losses": losses, "scale": scaler.get_scale(), "scaler_enabled": scaler.is_enabled()}))
`;

const READ_CKPT = String.raw`import json, sys
import torch
print(json.dumps({p: {k: str(v.dtype) for k, v in torch.load(p).items()} for p in sys.argv[1:]}))
`;

describe('dual-path fixes keep an AMP program\'s CPU results', () => {
  it('same losses, scaler state and checkpoint keys/dtypes before and after --fix --unsafe-fixes', () => {
    const fixed = fixDocument(pythonDocument('train.py', AMP_PROGRAM), RULES, DEFAULT_OPTIONS, { unsafe: true });
    const text = analysedText(fixed.doc);
    // the fixes this program is about were applied (the test compares a changed program)
    expect(text).toContain('accel.autocast(dtype=torch.float16)');
    expect(text).toContain('torch.cuda.amp.GradScaler(enabled=not accel.is_xla())');
    expect(text).toContain('scaler.scale(loss).backward()');
    // the user's rank guard stays the writer; the fp16 storage cast of the checkpoint stays `.half()`
    expect(text).toMatch(/if local_rank == 0:\n\s+torch\.save\(\{k: v\.half\(\) for k, v in model\.state_dict\(\)\.items\(\)\}, sys\.argv\[1\]\)\n\s+accel\.save\(model\.state_dict\(\), sys\.argv\[2\], master_only=False\)/);
    expect(fixed.needsAccel).toBe(true);

    const before = tmpProject({ 'train.py': AMP_PROGRAM, 'read.py': READ_CKPT });
    const after = tmpProject({ 'train.py': text, 'accel.py': accelModuleSource(), 'read.py': READ_CKPT });
    const results = [before, after].map((dir) => {
      const r = run(dir, 'train.py', ['half.pt', 'full.pt']);
      expect(r.stderr, dir).not.toMatch(/Traceback/);
      expect(r.status).toBe(0);
      const ckpt = run(dir, 'read.py', ['half.pt', 'full.pt']);
      expect(ckpt.status).toBe(0);
      return { run: lastJson(r.stdout), ckpt: lastJson(ckpt.stdout) };
    });
    expect(results[0].run.losses).toHaveLength(6);
    expect(results[1]).toEqual(results[0]);
    expect(Object.values(results[0].ckpt['half.pt'])).toEqual(['torch.float16', 'torch.float16', 'torch.float16', 'torch.float16']);
  });
});
