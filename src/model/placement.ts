/**
 * Programs that place nothing on an accelerator (issue 9): pure-CPU tutorials (`model = Net(); for x, y in loader:
 * loss.backward()`) run on the host CPU even on a TPU VM, so the device-work rules (host syncs, step barriers,
 * ragged batches, XLA checkpoints) describe work that never reaches a device; TPU114 reports the program instead.
 *
 * Conservative by design: any accelerator word outside comments, any `.to(x)` other than a dtype or `"cpu"`, or any
 * import that is not a known host library means "don't know" (false). A `from m import name` of a same-project module
 * is allowed when every imported name resolves into the project and that module passes the same test on its own (its
 * own imports host libraries only: one hop); so is an `import m` / `import pkg.m as m` whose every use is an attribute
 * chain resolving into such a module (`m.load_data(...)`). Memoised per Semantics.
 */
import type { Node } from '../core/parse';
import type { Semantics } from '../core/semantics';
import { callArgs, kwValue, stringContent } from '../core/semantics';
import type { ProjectView } from './project';

/** Words that mean a device may be chosen somewhere (identifiers, attributes, strings): matched case-insensitively. */
const ACCEL_WORDS =
  /cuda|(?<![a-z])xla(?!bel)|(?<![a-z])tpu|gpu|accelerat|lightning|deepspeed|dataparallel|distributed|device|\bamp\b|autocast|gradscaler|\bmps\b|\bhpu\b|\bnpu\b|\bxpu\b|\bmlu\b|habana|ipex|horovod|fsdp|colossal|multiprocessing|spawn|\bjax\b|rocm|nccl|gloo|cudnn|half\b|nvidia/i;

/** Top-level modules known to place nothing on a device by themselves. */
const HOST_LIBRARIES = new Set([
  '__future__', 'torch', 'torchvision', 'torchaudio', 'torchtext', 'numpy', 'matplotlib', 'sklearn', 'pandas', 'scipy', 'PIL',
  'os', 'sys', 'math', 'random', 'time', 'argparse', 'collections', 'itertools', 'functools', 'json', 'csv', 'pickle', 'gzip',
  're', 'string', 'glob', 'shutil', 'copy', 'datetime', 'io', 'urllib', 'unicodedata', 'zipfile', 'tarfile', 'warnings',
  'logging', 'typing', 'pathlib', 'tqdm', 'seaborn', 'struct', 'operator', 'heapq', 'errno', 'codecs', 'requests', 'gym',
  'visdom', 'tensorboardX', 'IPython', 'imageio', 'skimage', 'cv2', 'nltk', 'pprint', 'abc', 'dataclasses', 'enum',
]);

const DTYPE_ARG = /^torch\.(float(16|32|64)?|double|half|bfloat16|int(8|16|32|64)?|long|short|uint8|bool|complex(64|128))$/;

const memo = new WeakMap<Semantics, boolean>();
const moduleMemo = new WeakMap<Semantics, boolean>();
const trainMemo = new WeakMap<Semantics, boolean>();

/**
 * The file places nothing on an accelerator and imports only host libraries, or names from project modules that
 * place nothing either (see the module comment). `project` and `path` are the analysis's project scope.
 */
export function placesNothingOnAccelerator(sema: Semantics, project: ProjectView | null = null, path = ''): boolean {
  let r = memo.get(sema);
  if (r === undefined) memo.set(sema, (r = computePlaces(sema, true, project ? { project, path } : null)));
  return r;
}

/** `placesNothingOnAccelerator`, a train-kind hot loop in the file, and an optimizer built in it (a main program). */
export function trainsOnCpuOnly(sema: Semantics, project: ProjectView | null = null, path = ''): boolean {
  let r = trainMemo.get(sema);
  if (r === undefined) trainMemo.set(sema, (r = placesNothingOnAccelerator(sema, project, path) && !!trainingLoop(sema)));
  return r;
}

/** An imported project module: no accelerator word, host-library imports only (no further project hop), torch optional. */
function projectModulePlacesNothing(sema: Semantics): boolean {
  let r = moduleMemo.get(sema);
  if (r === undefined) moduleMemo.set(sema, (r = computePlaces(sema, false, null)));
  return r;
}

/**
 * `import m`, `import pkg.m` or `import pkg.m as m` of project modules: the file uses each bound name only as the head of
 * an attribute chain (`m.build_loader(...)`, `pkg.m.Net`) that resolves into a project module placing nothing.
 */
function importsProjectModulesHostOnly(imp: Node, sema: Semantics, scope: { project: ProjectView; path: string }): boolean {
  let names = 0;
  for (const child of imp.namedChildren) {
    const bound = child.type === 'aliased_import' ? child.childForFieldName('alias')?.text : child.type === 'dotted_name' ? child.namedChildren[0]?.text : null;
    if (!bound) return false;
    // an `import m` of a host library next to the project module (`import os, data`)
    if (importsHostOnlyName(child)) continue;
    let uses = 0;
    for (const id of sema.nodes('identifier')) {
      if (id.text !== bound) continue;
      // the import statements themselves
      let up: Node | null = id.parent;
      while (up && up.type !== 'import_statement' && up.type !== 'import_from_statement' && up.type !== 'module') up = up.parent;
      if (up && up.type !== 'module') continue;
      // the shortest attribute chain from the name that resolves into the project (`m.f`, `pkg.m.f`, `m.Net.step`)
      let at: Node = id;
      let hit = null;
      while (!hit && at.parent?.type === 'attribute' && at.parent.childForFieldName('object')?.id === at.id) {
        at = at.parent;
        hit = scope.project.resolveName(at, sema, scope.path);
      }
      if (!hit || !projectModulePlacesNothing(hit.module.sema)) return false;
      uses++;
    }
    if (!uses) return false;
    names++;
  }
  return names > 0;
}

function importsHostOnlyName(child: Node): boolean {
  const name = child.type === 'aliased_import' ? child.childForFieldName('name') : child;
  return !!name && HOST_LIBRARIES.has(name.text.split('.')[0]);
}

/** `from m import a, b as c` where m is a project module: every name resolves into it and it places nothing. */
function importsProjectHostOnly(imp: Node, sema: Semantics, scope: { project: ProjectView; path: string }): boolean {
  if (imp.type === 'import_statement') return importsProjectModulesHostOnly(imp, sema, scope);
  if (imp.type !== 'import_from_statement') return false;
  const mod = imp.childForFieldName('module_name');
  let names = 0;
  for (const child of imp.namedChildren) {
    if (child === mod || child.id === mod?.id) continue;
    const name = child.type === 'aliased_import' ? child.childForFieldName('name') : child.type === 'dotted_name' ? child : null;
    if (!name) return false; // `from m import *`
    const target = name.type === 'dotted_name' ? (name.namedChildren[name.namedChildren.length - 1] ?? name) : name;
    const r = scope.project.resolveName(target, sema, scope.path);
    if (!r || !projectModulePlacesNothing(r.module.sema)) return false;
    names++;
  }
  return names > 0;
}

/** The first train-kind hot loop of a file that also builds its optimizer (`torch.optim.X(...)`), else null. */
export function trainingLoop(sema: Semantics): Node | null {
  const builds = sema.callsResolvedWhere((c) => /^torch\.optim\.[A-Z]\w*$/.test(c)).length > 0;
  if (!builds) return null;
  const loops = sema.hotLoops().filter((h) => h.kind === 'train' && (h.anchor.type === 'for_statement' || h.anchor.type === 'while_statement') && sema.containsTrainSignal(h.anchor));
  loops.sort((a, b) => a.anchor.startIndex - b.anchor.startIndex);
  return loops[0] ? outermostLoop(loops[0].anchor) : null;
}

/**
 * The outermost `for`/`while` of the same function around a loop (`for epoch in range(n):` around `for x, y in loader:`):
 * the training loop as the program reads, reported once at its header.
 */
export function outermostLoop(loop: Node): Node {
  let out = loop;
  for (let p = loop.parent; p && p.type !== 'function_definition' && p.type !== 'class_definition' && p.type !== 'lambda'; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') out = p;
  }
  return out;
}

function computePlaces(sema: Semantics, main: boolean, scope: { project: ProjectView; path: string } | null): boolean {
  const text = sema.text;
  // comments blanked (strings stay: `"cuda"` in a string is a device choice)
  let stripped = '';
  let at = 0;
  for (const c of [...sema.nodes('comment')].sort((a, b) => a.startIndex - b.startIndex)) {
    if (c.startIndex < at) continue;
    stripped += text.slice(at, c.startIndex);
    at = c.endIndex;
  }
  stripped += text.slice(at);
  if (ACCEL_WORDS.test(stripped)) return false;
  if (main && (!/\bimport\b/.test(stripped) || !sema.usesTorch())) return false;
  for (const type of ['import_statement', 'import_from_statement', 'future_import_statement']) {
    for (const imp of sema.nodes(type)) if (!importsHostOnly(imp) && !(scope && importsProjectHostOnly(imp, sema, scope))) return false;
  }
  // `__import__`/`importlib` load what the file cannot see
  if (/__import__|importlib|(?<![.\w])(exec|eval)\s*\(/.test(stripped)) return false;
  for (const call of sema.nodes('call')) {
    const fn = call.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'to') continue;
    if (!hostOnlyTo(call)) return false;
  }
  return true;
}

function importsHostOnly(imp: Node): boolean {
  if (imp.type === 'future_import_statement') return true;
  if (imp.type === 'import_from_statement') {
    const mod = imp.childForFieldName('module_name');
    if (!mod || mod.type === 'relative_import') return false;
    return HOST_LIBRARIES.has(mod.text.split('.')[0]);
  }
  for (const child of imp.namedChildren) {
    const name = child.type === 'aliased_import' ? child.childForFieldName('name') : child.type === 'dotted_name' ? child : null;
    if (!name || !HOST_LIBRARIES.has(name.text.split('.')[0])) return false;
  }
  return true;
}

/** `.to(torch.float32)`, `.to(dtype=torch.long)`, `.to("cpu")`: a conversion that stays on the host. */
function hostOnlyTo(call: Node): boolean {
  const { positional, keywords } = callArgs(call);
  if (positional.length + keywords.size === 0) return false;
  for (const [k, kw] of keywords) {
    const v = kwValue(kw);
    if (k !== 'dtype' || !v || !DTYPE_ARG.test(v.text)) return false;
  }
  for (const a of positional) {
    if (DTYPE_ARG.test(a.text)) continue;
    if (a.type === 'string' && stringContent(a) === 'cpu') continue;
    return false;
  }
  return true;
}
