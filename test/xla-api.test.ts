/**
 * Every torch_xla API a fix emits exists in the fix's target version, checked against the test-only
 * emulation of torch_xla (test/emulation/torch_xla, written from the pytorch/xla source of each tag):
 * - each rule fixture is fixed (unsafe fixes included) for every target version 2.3-2.9, in the
 *   tpu-only and dual-path styles; every torch_xla name, and every call's keyword names, the fix added
 *   must resolve in the emulation at that version; torchtpu-profile fixes add no torch_xla name;
 * - the generated accel.py imports under the emulation at each version and each of its functions runs;
 * - the emulation enforces the preconditions the torch_xla source enforces (snippets that must raise).
 * Needs CPU PyTorch for /usr/bin/python3 (Debian python3-torch); skipped with a message without it,
 * and failing under CI=true.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { init, ROOT } from './setup';
import { RULES_BY_ID } from '../src/rules';
import { analysedText, fixDocument, notebookDocument, pythonDocument, type SourceDocument } from '../src/core/engine';
import { parseIpynb } from '../src/core/notebook';
import { DEFAULT_OPTIONS, type AnalyzeOptions } from '../src/core/types';
import { ACCEL_FUNCTIONS, accelModuleSource } from '../src/core/accel';
import type { Rule } from '../src/core/rule';

const PYTHON = process.env.TPU_READY_TEST_PYTHON ?? '/usr/bin/python3';
const EMULATION = path.join(ROOT, 'test/emulation');
const CHECKER = path.join(EMULATION, 'check_api.py');
const VERSIONS = ['2.3', '2.4', '2.5', '2.6', '2.7', '2.8', '2.9'];

const hasTorch = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const underCi = process.env.CI === 'true';
if (!hasTorch && !underCi) {
  console.warn(`xla-api.test.ts: SKIPPED, ${PYTHON} cannot import torch (install Debian's python3-torch)`);
}

function runPython(args: string[], version: string, input?: string, extraEnv: Record<string, string> = {}) {
  return spawnSync(PYTHON, args, {
    input,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, PYTHONPATH: EMULATION, TORCH_XLA_EMULATED_VERSION: version, PYTHONWARNINGS: 'default', ...extraEnv },
  });
}

interface CheckResult {
  version: string;
  checked: string[];
  problems: { id: string; name: string; kwargs: string[]; error: string }[];
  introduced: Record<string, string[]>;
  unparsed: string[];
  accel?: Record<string, string>;
}

function check(version: string, sources: { id: string; original: string; fixed: string }[], accel: boolean): CheckResult {
  const req = JSON.stringify({ sources, accel: accel ? accelModuleSource('accel_under_test') : null, accel_functions: ACCEL_FUNCTIONS });
  const r = runPython([CHECKER], version, req, { ACCEL_BACKEND: '' });
  if (r.status !== 0) throw new Error(`check_api.py failed at ${version}:\n${r.stderr}`);
  return JSON.parse(r.stdout) as CheckResult;
}

const fixtureFiles: string[] = [];
for (const family of fs.readdirSync(path.join(ROOT, 'src/rules'))) {
  const dir = path.join(ROOT, 'src/rules', family, 'fixtures');
  if (!fs.existsSync(dir)) continue;
  for (const f of fs.readdirSync(dir).sort()) if (/^TPU\d{3}.*\.(py|ipynb)$/.test(f)) fixtureFiles.push(path.join(dir, f));
}

function load(file: string): SourceDocument {
  const raw = fs.readFileSync(file, 'utf8');
  return file.endsWith('.ipynb') ? notebookDocument(file, parseIpynb(raw).cells) : pythonDocument(file, raw);
}

function styles(version: string): { name: string; options: Partial<AnalyzeOptions> }[] {
  const out: { name: string; options: Partial<AnalyzeOptions> }[] = [
    { name: 'tpu-only', options: { fixStyle: 'tpu-only', target: { profile: 'torch_xla', version } } },
    { name: 'dual-path', options: { fixStyle: 'dual-path', target: { profile: 'torch_xla', version } } },
  ];
  if (version === '2.9') out.push({ name: 'torchtpu', options: { fixStyle: 'tpu-only', target: { profile: 'torchtpu', version: 'preview' } } });
  return out;
}

/** Every fixture fixed at `version` in each style: the sources the checker compares. */
function fixedSources(version: string) {
  const sources: { id: string; original: string; fixed: string }[] = [];
  for (const file of fixtureFiles) {
    const name = path.basename(file);
    const rule = RULES_BY_ID.get(name.slice(0, 6)) as Rule | undefined;
    if (!rule) continue;
    const doc = load(file);
    for (const style of styles(version)) {
      const options: AnalyzeOptions = { ...DEFAULT_OPTIONS, ...style.options };
      const once = fixDocument(doc, [rule], options, { unsafe: true, strict: true });
      if (!once.applied) continue;
      sources.push({ id: `${name} [${style.name} ${version}]`, original: analysedText(doc), fixed: analysedText(once.doc) });
    }
  }
  return sources;
}

/**
 * Defects this test found in code another change owns (reported, not fixed here). Each must still
 * reproduce: the test fails once it is fixed, so the entry is removed with the fix.
 */
const KNOWN_DEFECTS: { version: string; fixture: RegExp; name: string; owner: string }[] = [
];

function knownDefect(version: string, p: { id: string; name: string }) {
  return KNOWN_DEFECTS.find((k) => k.version === version && k.fixture.test(p.id) && k.name === p.name);
}

beforeAll(async () => {
  await init();
});

describe.runIf(hasTorch || underCi)('torch_xla API of fixes and of accel.py, against the emulation', () => {
  it('has CPU PyTorch (required under CI=true)', () => {
    expect(hasTorch, `${PYTHON} cannot import torch`).toBe(true);
  });

  it('the checker reports a name absent in the target version and a keyword the signature lacks', () => {
    const bad = [
      { id: 'sync', original: 'import torch\n', fixed: 'import torch\nimport torch_xla\ntorch_xla.sync()\n' },
      { id: 'kind', original: '', fixed: 'import torch_xla.core.xla_model as xm\nxm.xla_device_kind()\n' },
      { id: 'fa', original: '', fixed: 'from torch_xla.experimental.custom_kernel import flash_attention\nflash_attention(q, k, v, causal=True, sm_scale=0.1)\n' },
      { id: 'step', original: '', fixed: 'import torch_xla.core.xla_model as xm\nxm.optimizer_step(opt, sync=True)\n' },
    ];
    const r = check('2.3', bad, false);
    expect(r.problems.map((p) => p.id).sort()).toEqual(['fa', 'kind', 'step', 'sync']);
    expect(check('2.9', bad.slice(0, 3), false).problems).toEqual([]);
  });

  for (const version of VERSIONS) {
    it(`fixes at target-version ${version} call only what torch_xla ${version} has; accel.py runs on it`, () => {
      const sources = fixedSources(version);
      expect(sources.length).toBeGreaterThan(50);
      const r = check(version, sources, true);
      expect(r.version).toBe(version);
      expect(r.checked.length, 'fixes emit torch_xla references').toBeGreaterThan(10);
      const problems = r.problems.filter((p) => !knownDefect(version, p)).map((p) => `${p.id}: ${p.name}${p.kwargs.length ? `(${p.kwargs.join(', ')}=)` : ''}: ${p.error}`);
      const accel = Object.entries(r.accel ?? {}).filter(([k, v]) => k !== '_backend' && v !== 'ok' && !KNOWN_DEFECTS.some((d) => d.version === version && d.name === `accel.${k}`)).map(([k, v]) => `accel.${k}: ${v}`);
      if (r.accel?._backend !== 'xla') accel.push(`accel.backend() is ${r.accel?._backend}, not xla, with torch_xla importable`);
      // the torchtpu profile speaks its own idioms: its fixes add no torch_xla API
      const torchtpu = Object.entries(r.introduced).filter(([id]) => id.includes('[torchtpu')).map(([id, names]) => `${id}: adds ${names.join(', ')}`);
      expect([...problems, ...accel, ...torchtpu], `torch_xla ${version}: references the fixes emit, or accel.py functions, that fail`).toEqual([]);
      // a known defect that no longer reproduces must leave the list
      for (const k of KNOWN_DEFECTS.filter((d) => d.version === version)) {
        expect(r.problems.some((p) => knownDefect(version, p) === k) || Object.entries(r.accel ?? {}).some(([f, v]) => `accel.${f}` === k.name && v !== 'ok'),
          `known defect fixed, remove it from KNOWN_DEFECTS: ${k.name} at ${version}`).toBe(true);
      }
    });
  }
});

/** Snippets run under the emulation at `version`: `ok` must print OK, `raises` must fail with the pattern. */
const PRECONDITIONS: { name: string; versions: string[]; code: string; expect: RegExp; stream?: 'stderr' | 'stdout'; ok?: boolean }[] = [
  {
    name: 'MpDeviceLoader with a CPU device fails on the first batch (bridge::AtenDeviceToXlaDevice)',
    versions: ['2.3', '2.9'],
    code: 'import torch, torch_xla.distributed.parallel_loader as pl\nnext(iter(pl.MpDeviceLoader([torch.zeros(2)], torch.device("cpu"))))',
    expect: /RuntimeError: .*Check failed: device\.type\(\) == at::kXLA/,
  },
  {
    name: 'MpDeviceLoader with an int rank (torch.device(0) is cuda:0) fails on the first batch',
    versions: ['2.9'],
    code: 'import torch, torch_xla.distributed.parallel_loader as pl\nnext(iter(pl.MpDeviceLoader([torch.zeros(2)], 0)))',
    expect: /RuntimeError: .*at::kXLA \(CUDA vs\. XLA\) cuda:0/,
  },
  {
    name: 'MpDeviceLoader with the XLA device yields batches on the device, a barrier before each batch and at the end',
    versions: ['2.3', '2.9'],
    ok: true,
    code: 'import torch, torch_xla, torch_xla.core.xla_model as xm, torch_xla.distributed.parallel_loader as pl\n' +
      'b = [x for x in pl.MpDeviceLoader([(torch.zeros(2), torch.ones(2))] * 3, torch_xla.device())]\n' +
      'import torch_xla._emu as e\nassert len(b) == 3 and all(xm.is_xla_tensor(x) for x, _ in b) and e.STATE.syncs == 5, e.STATE.syncs\nprint("OK")',
    expect: /OK/,
  },
  {
    name: 'initialize_cache after the first compile asserts',
    versions: ['2.3', '2.9'],
    code: 'import torch, torch_xla, torch_xla.runtime as xr\nx = torch.ones(2, device=torch_xla.device())\nprint(x.sum().item())\nxr.initialize_cache("/tmp/c")',
    expect: /AssertionError: Computation cache has already been initialized/,
  },
  {
    name: 'initialize_cache before any compile is accepted (twice too: the source checks only the cache)',
    versions: ['2.9'],
    ok: true,
    code: 'import torch_xla.runtime as xr\nxr.initialize_cache("/tmp/c")\nxr.initialize_cache("/tmp/c", readonly=True)\nprint("OK")',
    expect: /OK/,
  },
  {
    name: 'xmp.spawn with nprocs other than 1 or None raises from 2.6 (pjrt.py)',
    versions: ['2.6', '2.9'],
    code: 'import torch_xla.distributed.xla_multiprocessing as xmp\ndef f(i): pass\nxmp.spawn(f, nprocs=8)',
    expect: /ValueError: Unsupported nprocs \(8\)\. Please use nprocs=1 or None/,
  },
  {
    name: 'xmp.spawn with nprocs=8 only warns and ignores it before 2.6',
    versions: ['2.3', '2.5'],
    ok: true,
    code: 'import torch_xla.distributed.xla_multiprocessing as xmp\ndef f(i, a): assert i == 0 and a == 5\nxmp.spawn(f, args=(5,), nprocs=8)\nprint("OK")',
    expect: /Unsupported nprocs \(8\), ignoring/,
    stream: 'stderr',
  },
  {
    name: 'xm.optimizer_step(optimizer, barrier, optimizer_args, groups, pin_layout): no other keyword',
    versions: ['2.3', '2.9'],
    code: 'import torch, torch_xla.core.xla_model as xm\nm = torch.nn.Linear(2, 1)\no = torch.optim.SGD(m.parameters(), lr=1)\n' +
      'xm.optimizer_step(o, False, {}, None, True)\nxm.optimizer_step(o, barrier=True, optimizer_args={}, groups=None, pin_layout=True)\nxm.optimizer_step(o, sync=True)',
    expect: /TypeError: optimizer_step\(\) got an unexpected keyword argument 'sync'/,
  },
  {
    name: 'torch_xla.amp.autocast with float16 warns and disables autocast on TPU',
    versions: ['2.3', '2.9'],
    ok: true,
    code: 'import torch, torch_xla, torch_xla.amp as amp\nd = torch_xla.device()\nm = torch.nn.Linear(2, 2).to(d)\n' +
      'with amp.autocast(d, dtype=torch.float16):\n  y = m(torch.ones(1, 2, device=d))\nassert y.dtype == torch.float32\n' +
      'with torch.autocast("xla", dtype=torch.bfloat16):\n  y = m(torch.ones(1, 2, device=d))\nassert y.dtype == torch.bfloat16\nprint("OK")',
    expect: /TPU Autocast only supports dtype of torch.bfloat16/,
    stream: 'stderr',
  },
  {
    name: "the 'xla' process-group backend and xla:// init method (over gloo) after importing xla_backend",
    versions: ['2.3', '2.9'],
    ok: true,
    code: 'import torch, torch.distributed as dist, torch_xla, torch_xla.distributed.xla_backend\n' +
      'dist.init_process_group("xla", init_method="xla://")\nt = torch.ones(2, device=torch_xla.device())\ndist.all_reduce(t)\n' +
      'assert dist.get_backend() == "xla" and dist.get_world_size() == 1 and t.tolist() == [1.0, 1.0]\ndist.destroy_process_group()\nprint("OK")',
    expect: /OK/,
  },
  {
    name: "'xla' is not a process-group backend before 2.5 unless xla_backend is imported",
    versions: ['2.4'],
    code: 'import torch.distributed as dist, torch_xla\ndist.init_process_group("xla", init_method="xla://")',
    expect: /Invalid backend: 'xla'/,
  },
  {
    name: "import torch_xla registers the 'xla' backend from 2.5 (torch_xla.py imports xla_multiprocessing)",
    versions: ['2.5'],
    ok: true,
    code: 'import torch.distributed as dist, torch_xla\ndist.init_process_group("xla", init_method="xla://")\nprint("OK")',
    expect: /OK/,
  },
  { name: 'torch_xla.sync is absent in 2.3', versions: ['2.3'], code: 'import torch_xla\ntorch_xla.sync()', expect: /AttributeError: .*sync/ },
  { name: 'torch_xla.launch / manual_seed / compile are absent in 2.4', versions: ['2.4'], code: 'import torch_xla\nprint(hasattr(torch_xla, "manual_seed"), hasattr(torch_xla, "compile"))\ntorch_xla.launch', expect: /AttributeError: .*launch/ },
  { name: 'xm.xla_device_kind is absent in 2.5', versions: ['2.5'], code: 'import torch_xla.core.xla_model as xm\nxm.xla_device_kind()', expect: /AttributeError: .*xla_device_kind/ },
  { name: 'xm.xrt_world_size is removed in 2.7', versions: ['2.7'], code: 'import torch_xla.core.xla_model as xm\nxm.xrt_world_size()', expect: /AttributeError: .*xrt_world_size/ },
  { name: 'xm.xrt_world_size logs its deprecation in 2.5', versions: ['2.5'], ok: true, code: 'import torch_xla.core.xla_model as xm\nassert xm.xrt_world_size() == 1\nprint("OK")', expect: /xrt_world_size\(\) will be removed in release 2\.7\. is deprecated/, stream: 'stderr' },
  { name: 'xm.mark_step and xm.xla_device warn DeprecationWarning from 2.8', versions: ['2.8'], ok: true, code: 'import torch_xla.core.xla_model as xm\nxm.xla_device()\nxm.mark_step()\nprint("OK")', expect: /DeprecationWarning: Use torch_xla\.sync instead/, stream: 'stderr' },
  { name: 'flash_attention has no sm_scale in 2.3', versions: ['2.3'], code: 'import torch\nfrom torch_xla.experimental.custom_kernel import flash_attention\nq = torch.ones(1, 1, 2, 2)\nflash_attention(q, q, q, sm_scale=0.5)', expect: /TypeError: .*sm_scale/ },
  { name: 'torch_xla.amp.GradScaler is gone in 2.9', versions: ['2.9'], code: 'from torch_xla.amp import GradScaler', expect: /ImportError: cannot import name 'GradScaler'/ },
  { name: 'XLA_USE_FP16 warns from 2.5', versions: ['2.5', '2.9'], ok: true, code: 'import torch_xla\nprint("OK")', expect: /The environment variable 'XLA_USE_FP16' is deprecated/, stream: 'stderr' },
  { name: 'torch_xla.backends is absent before 2.8', versions: ['2.7'], code: 'import torch_xla.backends', expect: /ModuleNotFoundError: No module named 'torch_xla\.backends'/ },
];

describe.runIf(hasTorch || underCi)('emulation preconditions', () => {
  // every snippet in a forked child of one python process (torch imported once)
  const cases = PRECONDITIONS.flatMap((p, i) => p.versions.map((version) => ({ p, version, env: {
    TORCH_XLA_EMULATED_VERSION: version,
    MASTER_PORT: String(20000 + ((process.pid * 7 + i * 10 + VERSIONS.indexOf(version)) % 20000)),
    ...(/XLA_USE_FP16/.test(p.name) ? { XLA_USE_FP16: '1' } : {}),
  } })));
  cases.push({ p: { name: 'XLA_USE_FP16 does not warn in 2.4', versions: ['2.4'], code: 'import torch_xla\nprint("OK")', expect: /^((?!XLA_USE_FP16)[\s\S])*$/, stream: 'stderr', ok: true }, version: '2.4', env: { TORCH_XLA_EMULATED_VERSION: '2.4', MASTER_PORT: '0', XLA_USE_FP16: '1' } });
  let results: { status: number; stdout: string; stderr: string }[] = [];
  beforeAll(() => {
    const r = runPython([path.join(EMULATION, 'run_snippets.py')], '2.9', JSON.stringify(cases.map((c) => ({ code: c.p.code, env: c.env }))));
    if (r.status !== 0) throw new Error(`run_snippets.py failed:\n${r.stderr}`);
    results = JSON.parse(r.stdout);
  });
  cases.forEach(({ p, version }, i) => {
    it(`${p.name} (${version})`, () => {
      const r = results[i];
      if (p.ok) {
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).toContain('OK');
        expect(p.stream === 'stderr' ? r.stderr : r.stdout).toMatch(p.expect);
      } else {
        expect(r.status, `must fail:\n${r.stdout}`).not.toBe(0);
        expect(r.stderr).toMatch(p.expect);
      }
    });
  });
});
