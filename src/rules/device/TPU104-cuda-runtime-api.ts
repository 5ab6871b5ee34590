import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { Semantics } from '../../core/semantics';
import { callArgs, methodName, nearestAncestor } from '../../core/semantics';
import { deleteStatement } from '../../core/edits';
import { cudaGuarded, scopeOf, short, statementOf } from './cuda-util';
import { blocksAround } from './TPU103-cuda-capability-check';

type Kind = 'set_device' | 'synchronize' | 'current' | 'query' | 'name' | 'stream' | 'event' | 'graph' | 'nvtx' | 'profiler';

const API: Record<string, Kind> = {
  'torch.cuda.set_device': 'set_device',
  'torch.cuda.current_device': 'current',
  'torch.cuda.device': 'current',
  'torch.cuda.synchronize': 'synchronize',
  'torch.cuda.get_device_name': 'name',
  'torch.cuda.get_device_properties': 'query',
  'torch.cuda.get_device_capability': 'query',
  'torch.cuda.Stream': 'stream',
  'torch.cuda.stream': 'stream',
  'torch.cuda.current_stream': 'stream',
  'torch.cuda.default_stream': 'stream',
  'torch.cuda.Event': 'event',
  'torch.cuda.graph': 'graph',
  'torch.cuda.CUDAGraph': 'graph',
  'torch.cuda.make_graphed_callables': 'graph',
  'torch.cuda.graph_pool_handle': 'graph',
  // the CUDA profiler: `torch.cuda.cudart()` calls `_lazy_init()` first (PT:torch/cuda/__init__.py `cudart`), and
  // torch/cuda/profiler.py `start`/`stop`/`profile` call `cudart().cudaProfilerStart()/Stop()`
  'torch.cuda.cudart': 'profiler',
  'torch.cuda.profiler.start': 'profiler',
  'torch.cuda.profiler.stop': 'profiler',
  'torch.cuda.profiler.profile': 'profiler',
};

const ADVICE: Record<Kind, string> = {
  set_device: 'each process started by `torch_xla.launch` already owns one device',
  synchronize: 'to wait for the device use `torch_xla.sync()` then `xm.wait_device_ops()`',
  current: 'use `torch_xla.device()` for the device',
  query: 'a TPU has no CUDA properties; `xm.xla_device_kind()` names the TPU',
  name: 'read the TPU kind with `xm.xla_device_kind()`',
  stream: 'XLA has no user-visible streams',
  event: 'time with `time.perf_counter()` around `torch_xla.sync(); xm.wait_device_ops()`',
  graph: 'XLA already compiles the whole step into one graph',
  nvtx: 'use `torch_xla.debug.profiler` traces instead',
  profiler: 'profile the TPU with `torch_xla.debug.profiler` (`xp.start_server(port)` and a trace capture)',
};

/** The torchtpu preview has no known replacements: say what to remove or rewrite. */
const ADVICE_TORCHTPU: Record<Kind, string> = {
  set_device: 'remove it for the TPU device',
  synchronize: 'replace it with the TPU runtime\'s wait (no known preview API)',
  current: 'use `torch.device("tpu")` for the device',
  query: 'a TPU has no CUDA properties',
  name: 'a TPU has no CUDA device name',
  stream: 'remove the stream handling for the TPU',
  event: 'time with `time.perf_counter()` after waiting for the device',
  graph: 'remove the CUDA graph capture for the TPU',
  nvtx: 'remove the NVTX ranges for the TPU',
  profiler: 'remove the CUDA profiler calls for the TPU',
};

export default defineRule({
  id: 'TPU104',
  name: 'cuda-runtime-api',
  title: '`torch.cuda` runtime, stream, event and graph APIs',
  severity: 'error',
  step: 3,
  effort: 1,
  message: 'A `torch.cuda` runtime API initialises CUDA and raises on a TPU host',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Replace the CUDA runtime call' },
  triggers: ['cuda', 'record_stream'],
  docs: {
    what:
      'Checks for `torch.cuda` runtime calls: `set_device`, `current_device`, the `torch.cuda.device(...)` context manager, `synchronize`, ' +
      '`get_device_name`/`get_device_properties`/`get_device_capability`; streams (`torch.cuda.Stream`, `torch.cuda.stream(...)`, ' +
      '`current_stream`, `default_stream`, `Tensor.record_stream`); events (`torch.cuda.Event(...)` and `.elapsed_time()`); CUDA graphs ' +
      '(`torch.cuda.graph`, `CUDAGraph`, `make_graphed_callables`); `torch.cuda.nvtx.*`; and the CUDA profiler (`torch.cuda.cudart().cudaProfilerStart()`, `torch.cuda.profiler.start/stop/profile`). Calls that only run under ' +
      '`if torch.cuda.is_available():` (or another CUDA-only guard), or in a branch that already has an XLA arm, are not flagged. ' +
      'Uses of an event holder under `if <holder> is not None:` (`phase.start_event.record(torch.cuda.current_stream(device))` after `phase.start_event = torch.cuda.Event(...)`) are related locations of the creation\'s finding.',
    why:
      'These calls initialise CUDA, which a TPU host does not have, so they raise there. XLA has no user-visible streams or events: it ' +
      'traces the step and compiles it into one graph, which also makes CUDA graphs moot. `torch_xla.launch` binds one device per ' +
      'process (DEV:147-160), so `set_device` has nothing to do. To wait for the device, `torch_xla.sync()` dispatches the pending graph ' +
      '(TX:78-96) and `xm.wait_device_ops()` blocks until it finished (XM `wait_device_ops`).',
    example: 'torch.cuda.set_device(local_rank)\n...\ntorch.cuda.synchronize()\nprint(torch.cuda.get_device_name(0))',
    useInstead:
      'import torch_xla\nimport torch_xla.core.xla_model as xm\n\n# set_device: not needed, torch_xla.launch gives each process its device\n...\n' +
      'torch_xla.sync(); xm.wait_device_ops()\nprint(xm.xla_device_kind())',
    fixSafety:
      'Safe: `set_device` is deleted (dual-path: kept for CUDA runs behind `if accel.device_type() == "cuda":`), and a statement ' +
      '`synchronize()` becomes `torch_xla.sync(); xm.wait_device_ops()` (dual-path `accel.sync(wait=True)`, which still calls ' +
      '`torch.cuda.synchronize()` on CUDA). Use these waits for benchmarking only (see TPU803). Unsafe: `get_device_name()` becomes ' +
      '`xm.xla_device_kind()` (a different string; offered for torch_xla 2.6+ targets: `xla_device_kind` first appears in xla_model.py at v2.6.0), and `torch.cuda.nvtx` push/pop/mark and `record_stream` statements are removed. ' +
      'Streams, events, CUDA graphs and the other queries have no automatic fix: the code around them needs a rewrite.',
    sources: [
      'TX:78-96 torch_xla/torch_xla.py `sync(wait=False, reset_scope=True)` (pytorch/xla@022ecde)',
      'XM: torch_xla/core/xla_model.py `wait_device_ops(devices=[])`, `xla_device_kind(device=None)`, `xla_device_hw(device)` (pytorch/xla@fa72136)',
      'torch_xla/core/xla_model.py: `def xla_device_kind` at v2.6.0:207 (absent at v2.5.0; v2.9.0:177)',
      'DEV:147-160 (one device per process under torch_xla.launch)',
      'PT:torch/cuda/__init__.py `cudart()` (`_lazy_init()` then the CUDA runtime module), torch/cuda/profiler.py start/stop/profile (cudart().cudaProfilerStart/Stop); torch_xla/debug/profiler.py `start_server` (v2.3.0:18, v2.9.0:22)',
      'EX:debug/train_resnet_benchmark.py (timing with wait_device_ops)',
    ],
    torchtpu: 'No replacement is known for the preview: the finding names the call to remove or rewrite.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const idiom = ctx.idiom;
    const eventNames = new Set<string>();
    // holder text -> the `torch.cuda.Event(...)` calls assigned to it
    const creations = new Map<string, Node[]>();
    for (const a of sema.nodes('assignment')) {
      const right = a.childForFieldName('right');
      const left = a.childForFieldName('left');
      if (right?.type === 'call' && sema.callee(right) === 'torch.cuda.Event' && left) {
        eventNames.add(left.text);
        creations.set(left.text, [...(creations.get(left.text) ?? []), right]);
      }
    }
    // uses under `if <holder> is not None:` of an event holder that is None unless its `torch.cuda.Event(...)` ran
    // (stylegan2-ada's training loop: `phase.start_event = None; if rank == 0: phase.start_event = torch.cuda.Event(...)`,
    // then `if phase.start_event is not None: phase.start_event.record(torch.cuda.current_stream(device))`): on a TPU host
    // the creation raises first, and without it the guard skips them: related locations of the creation's finding
    const guardedUses: { call: Node; holder: string; message: string; fix: FixDraft | null }[] = [];
    const skip = (call: Node) => sema.inXlaAwareBranch(call) || cudaGuarded(call);
    const eventBlocks = new Map<number, { start: number; end: number; message: string }[]>();
    const pendingEvents: { call: Node; key: number; message: string; fix: FixDraft | null }[] = [];
    // event call -> its timing block (the block's first event reports, the others are its related locations)
    const eventKeys = new Map<number, number>();
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call);
      let kind: Kind | undefined = callee ? API[callee] : undefined;
      if (!kind && callee?.startsWith('torch.cuda.nvtx.')) kind = 'nvtx';
      const meth = methodName(call);
      let label = callee ? `${callee}()` : '';
      if (!kind && !callee && meth === 'record_stream') {
        kind = 'stream';
        label = 'Tensor.record_stream()';
      }
      if (!kind && !callee && meth === 'elapsed_time') {
        const recv = call.childForFieldName('function')?.childForFieldName('object');
        if (recv && eventNames.has(recv.text)) {
          kind = 'event';
          label = `${recv.text}.elapsed_time()`;
        }
      }
      if (!kind || skip(call)) continue;
      // `torch.load(f, map_location=lambda s, loc: s.cuda(torch.cuda.current_device()))`: TPU602 reports the CUDA map_location
      if (kind !== 'event' && inMapLocation(call)) continue;
      // `x.to(torch.cuda.current_device())` and `torch.device(torch.cuda.current_device())` belong to TPU102
      if (callee === 'torch.cuda.current_device') {
        const p = call.parent?.type === 'keyword_argument' ? call.parent.parent : call.parent;
        const owner = p?.parent;
        if (owner?.type === 'call' && (methodName(owner) === 'to' || sema.callee(owner) === 'torch.device' || callArgs(owner).keywords.has('device'))) continue;
      }
      const holder = creations.size ? eventGuardHolder(call, creations) : null;
      // one CUDA-event timing block per block of statements (`start = torch.cuda.Event(...)`, `end = ...`, `start.elapsed_time(end)`):
      // one finding, on the first event; the others are its related locations
      if (kind === 'event' && !holder) {
        const key = eventBlock(sema, call);
        eventKeys.set(call.id, key);
        const first = eventBlocks.get(key);
        if (first) {
          first.push({ start: call.startIndex, end: call.endIndex, message: 'the same CUDA-event timing' });
          continue;
        }
        eventBlocks.set(key, []);
      }
      const short_ = label.replace(/^torch\.cuda\./, 'torch.cuda.');
      // xm.xla_device_kind exists from 2.6 (xla_model.py v2.6.0:207): older targets get the CUDA-free advice
      const advice = idiom.profile === 'torchtpu' || ((kind === 'name' || kind === 'query') && !idiom.at('2.6')) ? ADVICE_TORCHTPU : ADVICE;
      const message = `\`${short(short_, 50)}\` needs a CUDA device and raises on a TPU host; ${advice[kind]}`;
      const stmt = statementOf(call);
      let fix = null;
      if (kind === 'set_device' && stmt) {
        if (idiom.profile === 'torch_xla' && !idiom.dualPath) {
          fix = { edits: [deleteStatement(ctx.text, stmt)], applicability: 'safe' as const, title: 'Remove `torch.cuda.set_device` (one device per process on XLA)' };
        } else if (idiom.dualPath) {
          const dt = idiom.deviceType();
          const indent = /[ \t]*$/.exec(ctx.text.slice(ctx.text.lastIndexOf('\n', stmt.startIndex - 1) + 1, stmt.startIndex))![0];
          const eol = ctx.text.includes('\r\n') ? '\r\n' : '\n';
          const lineStartOk = /^[ \t]*$/.test(ctx.text.slice(ctx.text.lastIndexOf('\n', stmt.startIndex - 1) + 1, stmt.startIndex));
          if (lineStartOk) {
            fix = {
              edits: [{ start: stmt.startIndex, end: stmt.endIndex, text: `if ${dt.text} == "cuda":${eol}${indent}    ${stmt.text}` }],
              imports: dt.imports,
              needsAccel: dt.needsAccel,
              applicability: 'safe' as const,
              title: 'Keep `torch.cuda.set_device` for CUDA runs only',
            };
          }
        }
      } else if (kind === 'synchronize' && stmt) {
        const wait = idiom.waitDeviceOps();
        if (wait) {
          fix = {
            edits: [{ start: call.startIndex, end: call.endIndex, text: wait.text }],
            imports: wait.imports,
            needsAccel: wait.needsAccel,
            applicability: 'safe' as const,
            title: `Replace with \`${wait.text}\``,
          };
        }
      } else if (kind === 'name') {
        const snip = idiom.at('2.6') && idiom.xlaOnly('xm.xla_device_kind()', { module: 'torch_xla.core.xla_model', alias: 'xm' });
        if (snip) {
          fix = { edits: [{ start: call.startIndex, end: call.endIndex, text: snip.text }], imports: snip.imports, applicability: 'unsafe' as const, title: 'Use `xm.xla_device_kind()`' };
        }
      } else if (stmt && idiom.profile === 'torch_xla' && !idiom.dualPath && ((kind === 'nvtx' && /\.(range_push|range_pop|mark)$/.test(callee ?? '')) || label === 'Tensor.record_stream()')) {
        fix = { edits: [deleteStatement(ctx.text, stmt)], applicability: 'unsafe' as const, title: `Remove \`${short(label, 40)}\`` };
      }
      if (holder) guardedUses.push({ call, holder, message, fix });
      else if (kind === 'event') pendingEvents.push({ call, key: eventBlock(sema, call), message, fix });
      else ctx.report(call, { message, fix });
    }
    for (const u of guardedUses) {
      const key = creations.get(u.holder)!.map((c) => eventKeys.get(c.id)).find((k) => k !== undefined);
      if (key !== undefined) eventBlocks.get(key)?.push({ start: u.call.startIndex, end: u.call.endIndex, message: `runs only when \`${short(u.holder, 30)}\` holds a CUDA event` });
      else ctx.report(u.call, { message: u.message, fix: u.fix });
    }
    for (const e of pendingEvents) {
      const related = eventBlocks.get(e.key) ?? [];
      ctx.report(e.call, { message: e.message, fix: e.fix, related: related.length ? related : undefined });
    }
  },
});

const MAP_LOCATION_STOPS: ReadonlySet<string> = new Set(['lambda', 'function_definition', 'block', 'module']);

/**
 * The event holder (`phase.start_event`) whose `if <holder> is not None:` / `if <holder>:` (a conjunct of the condition)
 * opens an arm that holds `call`, when the holder is assigned a `torch.cuda.Event(...)` in the file; else null.
 */
function eventGuardHolder(call: Node, creations: ReadonlyMap<string, Node[]>): string | null {
  for (const block of blocksAround(call)) {
    const owner = block.parent;
    if (!owner || (owner.type !== 'if_statement' && owner.type !== 'elif_clause') || owner.childForFieldName('consequence')?.id !== block.id) continue;
    const pending = [owner.childForFieldName('condition')];
    while (pending.length) {
      const c = pending.pop();
      if (!c) continue;
      if (c.type === 'parenthesized_expression') pending.push(c.namedChildren[0]);
      else if (c.type === 'boolean_operator' && c.childForFieldName('operator')?.text === 'and') pending.push(c.childForFieldName('left'), c.childForFieldName('right'));
      else if (c.type === 'comparison_operator' && /^is\s+not$/.test(c.children.filter((x) => x && !x.isNamed).map((x) => x!.text).join(' ')) && c.namedChildren[1]?.type === 'none') {
        const h = c.namedChildren[0]?.text;
        if (h && creations.has(h)) return h;
      } else if ((c.type === 'identifier' || c.type === 'attribute') && creations.has(c.text)) return c.text;
    }
  }
  return null;
}

/** Inside the lambda given as `map_location=` (one finding there, TPU602's). */
function inMapLocation(call: Node): boolean {
  const p = nearestAncestor(call, MAP_LOCATION_STOPS)?.ancestor;
  return p?.type === 'lambda' && p.parent?.type === 'keyword_argument' && p.parent.childForFieldName('name')?.text === 'map_location';
}

/**
 * The block of statements that holds a CUDA-event call, within its function: one timing block is the events created and
 * read in one block (a cell, a loop body); events of a training loop's setup and its far-away readout stay apart.
 */
function eventBlock(sema: Semantics, call: Node): number {
  const stmt = nearestAncestor(call, BLOCK_STOPS)?.ancestor;
  return (stmt && (stmt.type === 'block' || stmt.type === 'module') ? stmt : scopeOf(sema, call)).id;
}

const BLOCK_STOPS: ReadonlySet<string> = new Set(['block', 'module', 'lambda']);
