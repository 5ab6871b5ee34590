import { defineRule } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, conditionOf, kwValue, stringContent } from '../../core/semantics';
import { replace, replaceRange } from '../../core/edits';
import { calledFromDeviceCode, holdsDeviceState, itemsCopiedToCpu, referencesCuda, saveArgs, XSER_SAVE } from './util';
import type { Semantics } from '../../core/semantics';
import { deviceExprFor } from '../shared';
import { lastName } from '../../model/facts';
import { deviceKinds } from '../../model/values';
import type { RuleContext } from '../../core/rule';

const LOADS = new Set(['torch.load', 'torch.hub.load_state_dict_from_url']);

export default defineRule({
  id: 'TPU602',
  name: 'torch-load-cuda',
  title: '`torch.load` maps to CUDA',
  severity: 'error',
  step: 8,
  effort: 1,
  message: '`torch.load` maps the checkpoint to CUDA, which a TPU host does not have',
  fix: { availability: 'always', applicability: 'safe', title: 'Load to CPU (`map_location="cpu"`)' },
  triggers: ['load'],
  docs: {
    what:
      'Checks for `torch.load(...)` (and `torch.hub.load_state_dict_from_url`) whose `map_location` is a CUDA device (`"cuda:0"`, `torch.device("cuda")`, a CUDA-tainted variable, ' +
      '`lambda storage, loc: storage.cuda()`, or a dict mapping to CUDA), `torch.load(path)` without `map_location` in a file that also uses CUDA (the checkpoint was probably saved from GPU tensors; not when the file writes that path itself, by the same expression, a name bound to it, or the same checkpoint file name (for numbered checkpoints the same name template, `\'{}.pkl\'.format(epoch)`) through `torch.save`/`xm.save`/a save wrapper, earlier in the same run (a write before the load in its function or at module level) or only ever with no device state in it (a dataset cache): a file written on the host it runs on; a resume of device state the program writes later may come from a GPU run and stays reported; a path built from a parameter of the loading function, `def load(self, filename)`, is the choice of the caller and stays reported unless written in that same function; a write by a save helper of another module of the project called earlier in the same function, `early_stopping(loss, model, path)` writing `checkpoint.pth`, counts; not in a module whose checkpoints are CPU copies, `sd[k] = v.cpu()` before every `torch.save` of model state, or before that of the pair `save_network` of the loading `load_network`: CPU tensors load on any host; a warning, not the error, for published weights downloaded with `torch.hub.load_state_dict_from_url` and for weights loaded into a model still on the host that the function moves to CUDA only afterwards (`net.load_weight(torch.load(args.init_weights))` then `net.cuda()`: initial weights of unknown origin, which load anywhere if a library saved them from CPU tensors); not in an arm that runs only with CUDA, `if use_cuda: torch.load(p)` `else: torch.load(p, map_location=...)` (a map_location that names no CUDA, directly or through a name: `loc = \'cuda:{}\'.format(args.gpu)` then `map_location=loc` is CUDA, so an `if args.gpu is None:` arm that loads unmapped stays reported), also under an inner if of that arm and with `map_location=torch.device("cuda")` there: a TPU host takes the other arm), ' +
      'a `map_location` that is the CPU on a host without CUDA is no CUDA load: none when forced there (`if not torch.cuda.is_available(): device = "cpu"`, also handed on as a parameter by every call of the file), a warning for a run-time choice (`"cuda" if torch.cuda.is_available() else "cpu"`: the training device, the XLA device once TPU102\'s fix runs); ' +
      'a `map_location` that is the training device in a variable (`device` from a parameter, `next(self.parameters()).device`, `args.device`, `dist_util.dev()`; a warning: on a TPU host it is the XLA device, for which `torch.load` has no restore location), the same `map_location` given to a load wrapper of the project (`load_state_dict(path, map_location=dev())`, `load_from_checkpoint(path, map_location=device)`), ' +
      'and `torch.load` of a file the same script writes with `xser.save`.',
    why:
      'Tensors saved from a GPU carry their CUDA device; loading them on a host without CUDA fails unless they are mapped elsewhere. Load to the CPU, then let `load_state_dict` copy into the model already on the XLA device ' +
      '(load order from MIG:352-356). Files written by `torch_xla.utils.serialization.save` hold tensor references and must be read with `xser.load` (DEV:325-341).',
    example: 'sd = torch.load("ckpt.pt", map_location="cuda:0")\nmodel.load_state_dict(sd)',
    useInstead: 'sd = torch.load("ckpt.pt", map_location="cpu")\nmodel.load_state_dict(sd)\nmodel.to(device)',
    fixSafety:
      'Safe when the loaded object goes to `load_state_dict` (it copies into the parameters on their device): directly, or its name followed from the load through its uses in that scope (`sd["model"]`, `sd.get("model")`, one more name, membership tests and metadata reads such as `sd["epoch"]` allowed; any other use makes it unsafe). When the loaded tensors are used directly they now live on the CPU: ' +
      'the fix is then marked unsafe, move them with `.to(device)`; a whole model (`model = torch.load(...)` then used as `model(x)`/`model.eval()` and never moved) gets the `.to(device)` appended. Replacing `torch.load` by `xser.load` for an `xser.save` file is safe.',
    sources: ['MIG:352-356 (load to CPU, load_state_dict, then move)', 'DEV:325-341 (xser.save/xser.load)', 'torch_xla/utils/serialization.py (save writes tensor references, load resolves them)', 'PT:torch/serialization.py `default_restore_location` (no registered restore location for an `xla` device: RuntimeError "don\'t know how to restore data location"; seen on TPU in huggingface/transformers#7976)', 'PT:torch/_tensor.py `_reduce_ex_internal` (XLA tensors pickle as CPU numpy data plus their device string, rebuilt on that device by `_rebuild_device_tensor_from_numpy`)'],
    torchtpu: 'The same `map_location="cpu"` fix applies to torch_tpu.',
  },
  check(ctx) {
    if (!ctx.sema.usesTorch()) return;
    let cudaFile: boolean | undefined;
    let written: Written | undefined;
    const xserPaths = new Set(ctx.sema.callsResolvedTo([XSER_SAVE]).map((c) => saveArgs(c).path?.text).filter((t): t is string => !!t));
    for (const call of ctx.sema.nodes('call')) {
      const callee = ctx.sema.callee(call) ?? '';
      if (!LOADS.has(callee)) {
        if (!callee.startsWith('torch') && !ctx.sema.inXlaAwareBranch(call)) wrapperLoad(ctx, call);
        continue;
      }
      if (ctx.sema.inXlaAwareBranch(call)) continue;
      const { positional, keywords, list } = callArgs(call);
      const first = positional[0] ?? kwValue(keywords.get('f'));
      if (callee === 'torch.load' && first && xserPaths.has(first.text) && ctx.idiom.profile === 'torch_xla') {
        const xser = ctx.idiom.xlaAlways('xser.load', { module: 'torch_xla.utils.serialization', alias: 'xser' });
        ctx.report(call, {
          message: '`torch.load` reads a file this script writes with `xser.save`; read it with `xser.load`',
          fix: xser ? { title: 'Read it with `xser.load`', edits: [replace(call, `${xser.text}(${first.text})`)], imports: xser.imports } : null,
        });
        continue;
      }
      const applicability = feedsLoadStateDict(ctx, call) ? 'safe' : 'unsafe';
      // a whole model (`model = torch.load(path)` then `model(x)`) loaded to the CPU must go back to the device (issue 10:
      // it stayed on the CPU while its inputs went to the device); the load order of MIG:352-356, for a module
      const back = applicability === 'unsafe' && unmovedModel(ctx, call) ? deviceExprFor(ctx, call) : null;
      const moveBack = back ? [replaceRange(call.endIndex, call.endIndex, `.to(${back.text})`)] : [];
      const moveTitle = back ? `, then \`.to(${back.text})\`` : '';
      const ml = keywords.get('map_location');
      const mlValue = kwValue(ml) ?? (callee === 'torch.load' ? positional[1] : undefined) ?? null;
      if (mlValue) {
        if (!mapsToCuda(ctx, mlValue)) {
          // `map_location=device` with the training device in a variable (a parameter, `next(self.parameters()).device`,
          // `args.device`): on a TPU host that is the XLA device, and torch.load has no restore location for it
          // (PT:torch/serialization.py `default_restore_location` raises "don't know how to restore data location of
          // … (tagged with xla:0)": only cpu/cuda/mps/meta and the privateuse1 backend are registered)
          if (!mayBeAcceleratorDevice(ctx, mlValue)) continue;
          ctx.report(ml ?? mlValue, {
            severity: 'warning',
            message: `\`map_location=${short(mlValue.text)}\` loads the checkpoint onto the training device; on a TPU host that is the XLA device, which \`torch.load\` cannot restore to ("don't know how to restore data location"); load to "cpu" and let \`load_state_dict\` copy it to the device`,
            fix: { title: `Load to CPU (\`map_location="cpu"\`)${moveTitle}`, applicability, edits: [replace(mlValue, '"cpu"'), ...moveBack], imports: back?.imports, needsAccel: back?.needsAccel },
          });
          continue;
        }
        // `map_location=torch.device("cuda")` in the CUDA arm of `if use_gpu:` whose else arm loads to the CPU: a TPU
        // host takes the other arm
        if (cpuMappedElse(ctx, call)) continue;
        // on a host without CUDA the map_location is the CPU: forced (`if not torch.cuda.is_available(): device = "cpu"`,
        // PatchTST's learner.load handing it to load_model) it loads there; a run-time choice (`"cuda" if
        // torch.cuda.is_available() else "cpu"`) loads there too, until TPU102's fix makes that the XLA device: a warning
        const host = cpuWithoutCuda(ctx, mlValue, call, 0);
        if (host === 'cpu') continue;
        ctx.report(ml ?? mlValue, {
          ...(host === 'choice'
            ? {
                severity: 'warning' as const,
                message: choiceMessage(mlValue),
              }
            : { message: `\`map_location=${short(mlValue.text)}\` loads the checkpoint onto CUDA, which a TPU host does not have; load to "cpu"` }),
          fix: { title: `Load to CPU (\`map_location="cpu"\`)${moveTitle}`, applicability, edits: [replace(mlValue, '"cpu"'), ...moveBack], imports: back?.imports, needsAccel: back?.needsAccel },
        });
      } else {
        cudaFile ??= referencesCuda(ctx);
        // a checkpoint helper of a CUDA project (utils/checkpoints.py's `restore_checkpoint`, called by the CUDA
        // training script): the files it reads were written from GPU state
        if ((!cudaFile && !calledFromDeviceCode(ctx, call, true)) || !list) continue;
        // `if use_cuda: ckpt = torch.load(path)` `else: torch.load(path, map_location=lambda s, l: s)` (Wav2Lip's
        // `_load`): the arm runs only where CUDA is present; a TPU host takes the CPU-mapped one (TPU103 reports the guard)
        if (cpuMappedElse(ctx, call)) continue;
        // a file this program writes itself (`torch.save(sd, path)` then `torch.load(path)`): saved on the host it runs on,
        // it is no foreign GPU checkpoint (XLA tensors pickle as CPU data plus their device and rebuild there,
        // PT:torch/_tensor.py `_reduce_ex_internal`, the `xla` device branch, line 277 in torch 1.13); the save itself is TPU601's
        written ??= writtenPaths(ctx);
        if (first && ownFile(ctx, written, call, first)) continue;
        // the module writes its checkpoints as CPU tensors (`sd[k] = v.cpu()` before every `torch.save` of model
        // state): CPU tensors load on any host
        if (writesCpuCheckpoints(ctx, call)) continue;
        const args = list.namedChildren.filter((a): a is Node => !!a && a.type !== 'comment');
        const last = args[args.length - 1];
        if (!last) continue;
        // weights loaded into a model still on the host, which the function moves to CUDA only afterwards (LoRA's
        // gpt2_ft.py: `lm_net.load_weight(torch.load(args.init_checkpoint))`, then `lm_net.cuda()`), from a file this program
        // never writes: initial weights of unknown origin (a library's pretrained file, saved from CPU tensors, loads on any
        // host), not a resume of this program's GPU state: a warning
        const host = hostModelLoad(ctx, call);
        // published weights downloaded from a URL (`torch.hub.load_state_dict_from_url(url)`): written by whoever published
        // them, often from CPU tensors (they load anywhere), sometimes from GPU ones: a warning, not the error
        const url = callee === 'torch.hub.load_state_dict_from_url';
        ctx.report(call, {
          message: '`torch.load` without `map_location` in CUDA code: GPU-saved tensors fail to load on a TPU host; load to "cpu"',
          ...(host ? {
            severity: 'warning' as const,
            message: `\`torch.load\` without \`map_location\` of weights for \`${short(host)}\` before it moves to CUDA, from a file this program does not write: if the file holds GPU-saved tensors it fails to load on a TPU host (CPU-saved ones load anywhere); load to "cpu"`,
          } : {}),
          ...(url ? {
            severity: 'warning' as const,
            message: '`load_state_dict_from_url` without `map_location` in CUDA code: published weights saved from GPU tensors fail to load on a TPU host (CPU-saved ones load anywhere); load to "cpu"',
          } : {}),
          fix: { title: `Load to CPU (\`map_location="cpu"\`)${moveTitle}`, applicability, edits: [replaceRange(last.endIndex, last.endIndex, ', map_location="cpu"'), ...moveBack], imports: back?.imports, needsAccel: back?.needsAccel },
        });
      }
    }
  },
});

/** A write of a checkpoint path: where it is, the function it runs in (-1: module level) and the object written. */
interface Save {
  start: number;
  fn: number;
  obj: Node | null;
  /** Written by another module's helper (what it writes is not looked at: taken as device state). */
  helper?: boolean;
}

interface Written {
  /** Path texts written (the expression and the texts of its bindings). */
  texts: Map<string, Save[]>;
  /** Checkpoint file names written literally. */
  files: Map<string, Save[]>;
}

const SAVES = new Set(['torch.save', 'torch_xla.core.xla_model.save', 'torch_xla.utils.serialization.save']);
const SAVE_WRAPPER = /save|ckpt|checkpoint/i;
const CKPT_FILE = /^[\w-][\w.-]*\.(pt|pth|ckpt|bin|tar|pkl|safetensors)$/;

/** The paths this file writes: the path of `torch.save`/`xm.save`, and the arguments of save wrappers (`save_checkpoint(state, path)`). */
function writtenPaths(ctx: RuleContext): Written {
  const out: Written = { texts: new Map(), files: new Map() };
  const push = (m: Map<string, Save[]>, k: string, s: Save) => {
    const list = m.get(k);
    if (list) list.push(s);
    else m.set(k, [s]);
  };
  const add = (n: Node | null | undefined, at: Node, obj: Node | null) => {
    if (!n) return;
    const save: Save = { start: at.startIndex, fn: ctx.sema.enclosingFunction(at)?.id ?? -1, obj };
    for (const t of pathForms(ctx, n)) push(out.texts, t, save);
    for (const f of fileNames(n)) push(out.files, f, save);
  };
  for (const c of ctx.sema.nodes('call')) {
    const callee = ctx.sema.callee(c) ?? '';
    // a save helper of another module of the project (`early_stopping(loss, model, path)`, whose `__call__` does
    // `torch.save(model.state_dict(), path + "/checkpoint.pth")`): the file names it writes, at this call
    for (const f of helperFileNames(ctx, c)) push(out.files, f, { start: c.startIndex, fn: ctx.sema.enclosingFunction(c)?.id ?? -1, obj: null, helper: true });
    if (SAVES.has(callee)) {
      const { path, obj } = saveArgs(c);
      add(path, c, obj);
    } else if (!callee.startsWith('torch') && SAVE_WRAPPER.test(lastName(c.childForFieldName('function') ?? c))) {
      const { positional, keywords } = callArgs(c);
      for (const a of positional.slice(1)) add(a, c, positional[0] ?? null);
      for (const v of keywords.values()) add(kwValue(v), c, positional[0] ?? null);
    }
  }
  return out;
}

/**
 * The checkpoint file names (`"checkpoint.pth"`) that `torch.save` writes literally in the project function a call of
 * this file reaches in another module: `helper(...)`, `mod.helper(...)`, or `obj(...)` / `obj.method(...)` where `obj`
 * is bound to an instance of a class of another module (`__call__` / that method), with its own `self.x(...)` calls,
 * two levels deep. Empty when the file is analysed alone.
 */
function helperFileNames(ctx: RuleContext, call: Node): string[] {
  const project = ctx.project;
  const fn = call.childForFieldName('function');
  if (!project || !fn || (ctx.sema.callee(call) ?? '').startsWith('torch')) return [];
  let def: Node | null = null;
  let sema: Semantics | null = null;
  const r = project.resolveCall(call, ctx.sema, ctx.path);
  if (r && (r.kind === 'function' || r.kind === 'method')) {
    def = r.def;
    sema = r.module.sema;
  } else {
    // the instance: a name bound to `Cls(...)` of another module
    const objName = fn.type === 'identifier' ? fn.text : fn.type === 'attribute' ? fn.childForFieldName('object')?.text : undefined;
    const meth = fn.type === 'identifier' ? '__call__' : fn.childForFieldName('attribute')?.text;
    if (!objName || !meth) return [];
    for (const b of ctx.sema.bindings(objName)) {
      if (b.type !== 'call') continue;
      const cls = project.resolveCall(b, ctx.sema, ctx.path);
      if (cls?.kind !== 'class') continue;
      const body = cls.def.childForFieldName('body');
      const m = body?.namedChildren.find((d) => d?.type === 'function_definition' && d.childForFieldName('name')?.text === meth) ?? null;
      if (m) {
        def = m;
        sema = cls.module.sema;
        break;
      }
    }
  }
  if (!def || !sema) return [];
  const out: string[] = [];
  const seen = new Set<number>();
  const visit = (f: Node, d: number) => {
    if (seen.has(f.id) || d < 0) return;
    seen.add(f.id);
    for (const c of sema!.within('call', f)) {
      if (SAVES.has(sema!.callee(c) ?? '')) {
        const { path } = saveArgs(c);
        if (path) out.push(...fileNames(path));
      } else for (const g of sema!.calledFunctions(c)) visit(g, d - 1);
    }
  };
  visit(def, 2);
  return out;
}

/**
 * Every `torch.save` of this file that writes device state writes a state dict whose items it replaced by CPU copies
 * (`for k, v in sd.items(): sd[k] = v.cpu()`), and there is one: the project writes its checkpoints as CPU tensors.
 * A load in `load_network` looks only at the saves of its pair `save_network` when the file has one (KAIR's
 * model_base: networks saved as CPU copies, optimizers as they are, each loaded by its own helper).
 */
function writesCpuCheckpoints(ctx: RuleContext, load: Node): boolean {
  const fname = ctx.sema.enclosingFunction(load)?.childForFieldName('name')?.text ?? '';
  const pair = /^load_/.test(fname) ? fname.replace(/^load_/, 'save_') : null;
  const saves = ctx.sema.callsResolvedTo(SAVES);
  const paired = pair ? saves.filter((c) => ctx.sema.enclosingFunction(c)?.childForFieldName('name')?.text === pair) : [];
  let cpu = false;
  for (const c of paired.length ? paired : saves) {
    const { obj } = saveArgs(c);
    if (obj?.type === 'identifier' && itemsCopiedToCpu(ctx, obj)) cpu = true;
    else if (holdsDeviceState(ctx, obj)) return false;
  }
  return cpu;
}

/** The expression's text, and the texts of its bindings when it is a name (`ckpt = os.path.join(d, "best.pt")`). */
function pathForms(ctx: RuleContext, n: Node): string[] {
  const forms = [n.text];
  if (n.type === 'identifier' || n.type === 'attribute') for (const b of ctx.sema.bindings(n.text)) forms.push(b.text);
  return forms;
}

/** Checkpoint file names written literally in the expression (`"best.pt"`, `f"{out}/model_best.pth"`). */
function fileNames(n: Node): string[] {
  const out: string[] = [];
  const walk = (x: Node) => {
    if (x.type === 'string') {
      const body = x.text.replace(/^[a-zA-Z]*("""|\'\'\'|"|')/, '').replace(/("""|\'\'\'|"|')$/, '');
      const last = body.split(/[\\/}]/).pop() ?? '';
      if (CKPT_FILE.test(last)) out.push(last);
      // a numbered checkpoint whose name is all interpolation (`f"{epoch}.pkl"`): its template, `{}.pkl`
      else if (/\}\.(pt|pth|ckpt|bin|tar|pkl)$/.test(body)) out.push(template(x));
      return;
    }
    // `'{}.pkl'.format(epoch)` (pyGAT's train.py writes every epoch, then reloads the best one): the template
    const f = x.type === 'call' ? x.childForFieldName('function') : null;
    const obj = f?.type === 'attribute' && f.childForFieldName('attribute')?.text === 'format' ? f.childForFieldName('object') : null;
    if (obj?.type === 'string') {
      const body = template(obj);
      if (/\}\.(pt|pth|ckpt|bin|tar|pkl)$/.test(body)) out.push(body);
      return;
    }
    for (const c of x.namedChildren) if (c) walk(c);
  };
  walk(n);
  return out;
}

/** A string's body with each interpolation or format field as `{}`: `f"{out}/{epoch}.pt"` and `"{}/{}.pt"` give `{}/{}.pt`. */
function template(str: Node): string {
  let body = '';
  let at = str.startIndex;
  for (const c of str.namedChildren) {
    if (c?.type !== 'interpolation') continue;
    body += str.text.slice(at - str.startIndex, c.startIndex - str.startIndex) + '{}';
    at = c.endIndex;
  }
  body += str.text.slice(at - str.startIndex);
  return body
    .replace(/^[a-zA-Z]*("""|\'\'\'|"|')/, '')
    .replace(/("""|\'\'\'|"|')$/, '')
    .replace(/\{[^{}]*\}/g, '{}');
}

/** The writes of this file that the loaded path names (same expression, a name bound to it, the same checkpoint file name). */
function writesOf(ctx: RuleContext, w: Written, path: Node): Save[] {
  // `def load(self, filename): torch.load(filename + "_critic")` (TD3): the caller names the file, which may be any
  // checkpoint (`--load_model`), so the same expression in `save(self, filename)` does not make it this program's own
  const fn = ctx.sema.enclosingFunction(path);
  const params = new Set((fn?.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p?.type === 'identifier' ? p.text : p?.childForFieldName('name')?.text ?? p?.namedChildren[0]?.text ?? '')));
  const fromParam = ctx.sema.within('identifier', path).some((id) => params.has(id.text)) || (path.type === 'identifier' && params.has(path.text));
  const fnId = fn?.id ?? -1;
  const out: Save[] = [];
  for (const t of pathForms(ctx, path)) for (const s of w.texts.get(t) ?? []) if (s.fn === fnId || !fromParam) out.push(s);
  const forms = [path, ...(path.type === 'identifier' || path.type === 'attribute' ? ctx.sema.bindings(path.text) : [])];
  for (const f of forms) for (const name of fileNames(f)) out.push(...(w.files.get(name) ?? []));
  return out;
}

/**
 * A load of a file this program writes itself that cannot be a GPU checkpoint: written earlier in the same run (a
 * write before the load, in its function or at module level: a tutorial saving then reloading its model), or only ever
 * written with no device state in it (a dataset cache). A resume of device state this program saves later (`queue.pth`
 * read at start-up, written every epoch) may come from a run on a GPU: still reported.
 */
function ownFile(ctx: RuleContext, w: Written, load: Node, path: Node): boolean {
  const saves = writesOf(ctx, w, path);
  if (!saves.length) return false;
  const fn = ctx.sema.enclosingFunction(load)?.id ?? -1;
  if (saves.some((s) => s.start < load.startIndex && (s.fn === fn || s.fn === -1))) return true;
  return saves.every((s) => !s.helper && !holdsDeviceState(ctx, s.obj));
}

const DEVICE_MOVE = /\.(cuda|to)\s*\(/;

/**
 * The model a load's value goes into (`m.load_state_dict(torch.load(p))`, `m.load_weight(sd)` for `sd = torch.load(p)`,
 * also `sd["model"]`), when that model is on the host at the load: no `.cuda()`/`.to(...)` of it (or in its binding) before
 * the load in the function, and one after it. Its text, or null.
 */
function hostModelLoad(ctx: RuleContext, call: Node): string | null {
  const fn = ctx.sema.enclosingFunction(call);
  if (!fn) return null;
  const consumerOf = (n: Node): Node | null => {
    let e: Node = n;
    while (e.parent?.type === 'subscript' && e.parent.childForFieldName('value')?.id === e.id) e = e.parent;
    const holder = e.parent?.type === 'keyword_argument' ? e.parent.parent : e.parent;
    const into = holder?.type === 'argument_list' && holder.parent?.type === 'call' ? holder.parent : null;
    const f = into?.childForFieldName('function');
    return f?.type === 'attribute' && /^load/.test(f.childForFieldName('attribute')?.text ?? '') ? f.childForFieldName('object') : null;
  };
  let model = consumerOf(call);
  const p = call.parent;
  if (!model && p?.type === 'assignment' && p.childForFieldName('right')?.id === call.id && p.childForFieldName('left')?.type === 'identifier') {
    const name = p.childForFieldName('left')!.text;
    for (const u of ctx.sema.identifiersNamed(name)) {
      if (u.startIndex <= call.endIndex || ctx.sema.enclosingFunction(u)?.id !== fn.id) continue;
      model = consumerOf(u);
      if (model) break;
    }
  }
  if (!model || (model.type !== 'identifier' && model.type !== 'attribute')) return null;
  const name = model.text;
  let after = false;
  for (const c of ctx.sema.within('call', fn)) {
    const f = c.childForFieldName('function');
    const moves = f?.type === 'attribute' && f.childForFieldName('object')?.text === name && /^(cuda|to)$/.test(f.childForFieldName('attribute')?.text ?? '');
    if (!moves) continue;
    if (c.startIndex < call.startIndex) return null;
    after = true;
  }
  if (!after) return null;
  // `name = Net().cuda()` before the load: already on the device
  for (const a of ctx.sema.within('assignment', fn)) {
    if (a.startIndex < call.startIndex && a.childForFieldName('left')?.text === name && DEVICE_MOVE.test(a.childForFieldName('right')?.text ?? '')) return null;
  }
  return name;
}

const MODULE_USE = /^(eval|train|parameters|named_parameters|forward|modules|children|state_dict|zero_grad|half|float|requires_grad_)$/;

/**
 * `name = torch.load(...)` where `name` is then used as a module (`name(x)`, `name.eval()`, `name.parameters()`) and never
 * moved (`name.to(...)`, `name.cuda()`): the load placed it on the device, and a CPU map leaves it on the CPU.
 */
function unmovedModel(ctx: RuleContext, call: Node): boolean {
  const p = call.parent;
  if (p?.type !== 'assignment' || p.childForFieldName('right')?.id !== call.id) return false;
  const left = p.childForFieldName('left');
  if (!left || (left.type !== 'identifier' && left.type !== 'attribute')) return false;
  const fn = ctx.sema.enclosingFunction(call)?.id ?? null;
  const name = left.text;
  let used = false;
  // the calls after the load (the index is in document order: starts never decrease, so the first is found by a binary
  // search), and of those only the ones whose function is `name` or `name.…` (indexed once per file by that text:
  // passing over every later call of the file once per load was quadratic). A disqualifying call anywhere after the
  // load answers false whatever else is found, so the two lists need no interleaving.
  const calls = ctx.sema.nodes('call');
  let lo = 0;
  for (let hi = calls.length; lo < hi; ) {
    const mid = (lo + hi) >> 1;
    if (calls[mid].startIndex < call.endIndex) lo = mid + 1;
    else hi = mid;
  }
  const index = callTextIndex(ctx.sema, calls);
  for (const k of index.byObject.get(name) ?? []) {
    if (k < lo) continue;
    const m = calls[k].childForFieldName('function')!.childForFieldName('attribute')?.text ?? '';
    if (m === 'to' || m === 'cuda' || m === 'load_state_dict') return false;
    if (MODULE_USE.test(m)) used = true;
  }
  if (used) return true;
  for (const k of index.byFunction.get(name) ?? []) {
    if (k >= lo && (ctx.sema.enclosingFunction(calls[k])?.id ?? null) === fn) return true;
  }
  return false;
}

/** Positions in `nodes('call')` by the call's function text (`f`, `a.b`) and, for `x.m(...)`, by its object's text (`x`). */
interface CallTextIndex {
  byFunction: Map<string, number[]>;
  byObject: Map<string, number[]>;
}
const callTextIndexes = new WeakMap<Semantics, CallTextIndex>();

function callTextIndex(sema: Semantics, calls: readonly Node[]): CallTextIndex {
  let index = callTextIndexes.get(sema);
  if (index) return index;
  index = { byFunction: new Map(), byObject: new Map() };
  const add = (map: Map<string, number[]>, key: string, k: number) => {
    const list = map.get(key);
    if (list) list.push(k);
    else map.set(key, [k]);
  };
  calls.forEach((c, k) => {
    const f = c.childForFieldName('function');
    if (!f) return;
    add(index!.byFunction, f.text, k);
    if (f.type === 'attribute') {
      const obj = f.childForFieldName('object');
      if (obj) add(index!.byObject, obj.text, k);
    }
  });
  callTextIndexes.set(sema, index);
  return index;
}

/**
 * A load wrapper given a `map_location` (`dist_util.load_state_dict(path, map_location=dist_util.dev())`, a Lightning
 * `load_from_checkpoint(path, map_location=device)`): the keyword is `torch.load`'s, forwarded; the same two cases as a
 * direct load. The fix is safe only when the result goes straight into `load_state_dict(...)`.
 */
function wrapperLoad(ctx: RuleContext, call: Node): void {
  const ml = callArgs(call).keywords.get('map_location');
  const v = kwValue(ml);
  if (!ml || !v) return;
  const p = call.parent?.type === 'argument_list' ? call.parent.parent : null;
  const applicability = p?.type === 'call' && /\.load_state_dict$/.test(p.childForFieldName('function')?.text ?? '') ? 'safe' : 'unsafe';
  const fix = { title: 'Load to CPU (`map_location="cpu"`)', applicability: applicability as 'safe' | 'unsafe', edits: [replace(v, '"cpu"')] };
  if (mapsToCuda(ctx, v)) {
    ctx.report(ml, cpuWithoutCuda(ctx, v, call, 0) === 'choice'
      ? { severity: 'warning', message: choiceMessage(v), fix }
      : { message: `\`map_location=${short(v.text)}\` loads the checkpoint onto CUDA, which a TPU host does not have; load to "cpu"`, fix });
  } else if (mayBeAcceleratorDevice(ctx, v)) {
    ctx.report(ml, {
      severity: 'warning',
      message: `\`map_location=${short(v.text)}\` loads the checkpoint onto the training device; on a TPU host that is the XLA device, which \`torch.load\` cannot restore to ("don't know how to restore data location"); load to "cpu" and let \`load_state_dict\` copy it to the device`,
      fix,
    });
  }
}

/**
 * The load sits in the CUDA arm of `if use_cuda: torch.load(p)` (a condition naming CUDA or a GPU: `use_cuda`,
 * `torch.cuda.is_available()`, `device == "cuda"`) whose `else` arm loads with a `map_location`: a TPU host takes the
 * other arm. (The guard model's cudaGuarded is broader: it also calls the code after an unguarded `.cuda()` CUDA-only.)
 */
function cpuMappedElse(ctx: RuleContext, call: Node): boolean {
  for (let child: Node = call, p = call.parent; p; child = p, p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'module') return false;
    if (p.type !== 'if_statement' || p.childForFieldName('consequence')?.id !== child.id) continue;
    // an inner if of the CUDA arm (`if use_gpu:` `if ndevices > 1: torch.load(p)` `else: torch.load(p, map_location=cuda)`,
    // dlrm): still in that arm; the enclosing CUDA condition decides
    if (!/cuda|gpu/i.test(p.childForFieldName('condition')?.text ?? '')) continue;
    const other = p.namedChildren.find((c) => c?.type === 'else_clause');
    // the other arm loads with a map_location that does not name CUDA (`map_location=torch.device("cpu")`, a lambda),
    // also through a name: `loc = 'cuda:{}'.format(args.gpu)` then `map_location=loc` (simsiam's `if args.gpu is None:`
    // arm loads unmapped, its else arm onto the chosen GPU: both CUDA, no CPU arm for a TPU host to take)
    if (!other || !/\bload\s*\([^]*\bmap_location\s*=/.test(other.text) || /\bmap_location\s*=[^,)]*cuda/i.test(other.text)) return false;
    const maps = other.descendantsOfType('keyword_argument').filter((k) => k?.childForFieldName('name')?.text === 'map_location');
    return !maps.some((k) => ctx.model.namesCuda(k!.childForFieldName('value')));
  }
  return false;
}

/** The warning for a `map_location` that is CUDA or else the CPU, chosen at run time. */
function choiceMessage(v: Node): string {
  return `\`map_location=${short(v.text)}\` is the CPU on a host without CUDA, but it is the training device: once that is the XLA device, \`torch.load\` cannot restore to it ("don't know how to restore data location"); load to "cpu" and let \`load_state_dict\` copy it to the device`;
}

const IS_AVAILABLE = /^torch\.cuda\.is_available\(\s*\)$/;

/** `"cpu"`, `torch.device("cpu")`. */
function isCpuLiteral(v: Node): boolean {
  if (v.type === 'string') return /^[a-z]*(['"])cpu\1$/i.test(v.text);
  if (v.type === 'call' && /^(torch\.device|str)$/.test(v.childForFieldName('function')?.text ?? '')) {
    const a = callArgs(v).positional;
    return a.length === 1 && isCpuLiteral(a[0]);
  }
  return false;
}

/**
 * What a `map_location` is on a host without CUDA: 'cpu' when forced there (a literal, `if not
 * torch.cuda.is_available(): device = "cpu"` before the load in its function, or a parameter every call of this file
 * passes such a value to, its default counting where omitted), 'choice' when a run-time choice gives the CPU there
 * (`"cuda" if torch.cuda.is_available() else "cpu"`, also through `torch.device(...)` or a name bound to it), else null.
 */
function cpuWithoutCuda(ctx: RuleContext, v: Node, at: Node, depth: number): 'cpu' | 'choice' | null {
  const r = cpuWithoutCudaHere(ctx, v, at, depth);
  if (r || depth > 3) return r;
  // else a value the model knows as a run-time choice of CUDA or the CPU (`dist_util.dev()` in another module: `if
  // th.cuda.is_available(): return th.device(f"cuda:{rank}")` then `return th.device("cpu")`)
  const kinds = deviceKinds(ctx.model.value(v));
  return kinds.includes('cuda') && kinds.includes('cpu') && kinds.every((k) => k === 'cuda' || k === 'cpu') ? 'choice' : null;
}

function cpuWithoutCudaHere(ctx: RuleContext, v: Node, at: Node, depth: number): 'cpu' | 'choice' | null {
  if (depth > 3) return null;
  if (isCpuLiteral(v)) return 'cpu';
  if (v.type === 'parenthesized_expression' && v.namedChildren[0]) return cpuWithoutCuda(ctx, v.namedChildren[0], at, depth);
  if (v.type === 'conditional_expression') {
    const [yes, cond, no] = v.namedChildren;
    if (!yes || !cond || !no) return null;
    const neg = cond.type === 'not_operator' ? cond.childForFieldName('argument') : null;
    if (IS_AVAILABLE.test(cond.text)) return cpuWithoutCuda(ctx, no, at, depth + 1) ? 'choice' : null;
    if (neg && IS_AVAILABLE.test(neg.text)) return cpuWithoutCuda(ctx, yes, at, depth + 1) ? 'choice' : null;
    return null;
  }
  if (v.type === 'call' && v.childForFieldName('function')?.text === 'torch.device') {
    const a = callArgs(v).positional;
    return a.length === 1 ? cpuWithoutCuda(ctx, a[0], at, depth + 1) : null;
  }
  if (v.type !== 'identifier') return null;
  const fn = ctx.sema.enclosingFunction(at);
  // `if not torch.cuda.is_available(): device = "cpu"` in the function's own body, before the load
  for (const st of fn?.childForFieldName('body')?.namedChildren ?? []) {
    if (!st || st.startIndex >= at.startIndex || st.type !== 'if_statement') continue;
    const cond = conditionOf(st);
    const neg = cond?.type === 'not_operator' ? cond.childForFieldName('argument') : null;
    if (!neg || !IS_AVAILABLE.test(neg.text) || st.namedChildren.some((c) => c?.type === 'else_clause' || c?.type === 'elif_clause')) continue;
    const body = st.childForFieldName('consequence')?.namedChildren ?? [];
    if (body.some((b) => {
      const a = b?.type === 'expression_statement' ? b.namedChildren[0] : null;
      const right = a?.childForFieldName('right');
      return a?.type === 'assignment' && a.childForFieldName('left')?.text === v.text && !!right && isCpuLiteral(right);
    })) return 'cpu';
  }
  const exprs = ctx.model.bindingExpressions(v);
  if (!exprs.length) return null;
  if (exprs.every((e) => e !== null)) {
    const r = exprs.map((e) => cpuWithoutCuda(ctx, e!, e!, depth + 1));
    return r.every((x) => x) ? (r.includes('choice') ? 'choice' : 'cpu') : null;
  }
  // a parameter: what every call of its function in this file passes
  if (!fn || exprs.length !== 1) return null;
  const name = fn.childForFieldName('name')?.text;
  const params = (fn.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p && p.type !== 'comment');
  const idx = params.findIndex((p) => (p.type === 'identifier' ? p.text : p.childForFieldName('name')?.text) === v.text);
  if (!name || idx < 0 || params[0]?.text === 'self') return null;
  const dflt = params[idx].childForFieldName('value');
  const calls = ctx.sema.nodes('call').filter((c) => c.childForFieldName('function')?.text === name);
  if (!calls.length) return null;
  let out: 'cpu' | 'choice' = 'cpu';
  for (const c of calls) {
    const { positional, keywords } = callArgs(c);
    const arg = kwValue(keywords.get(v.text)) ?? positional[idx] ?? dflt;
    const r = arg ? cpuWithoutCuda(ctx, arg, c, depth + 1) : null;
    if (!r) return null;
    if (r === 'choice') out = 'choice';
  }
  return out;
}

const DEVICE_NAME = /^(device|dev|\w+_device|DEVICE|\w+_DEVICE)$/;

/**
 * A `map_location` that names a device that may be the accelerator: a device value that is not the CPU (XLA, chosen at
 * run time, unknown), or an expression named as one (`device`, `self.device`, `args.device`, `x.device`,
 * `get_device()`, `dist_util.dev()`) whose value the model does not know. Strings, lambdas, dicts and a parameter
 * named `map_location` (the caller's choice) are not.
 */
function mayBeAcceleratorDevice(ctx: RuleContext, v: Node): boolean {
  const kinds = deviceKinds(ctx.model.value(v));
  if (kinds.length) return kinds.some((k) => k !== 'cpu');
  if (v.type === 'string' || ctx.model.isHost(v)) return false;
  if (v.type === 'identifier' || v.type === 'attribute') return DEVICE_NAME.test(lastName(v));
  if (v.type === 'call') {
    const f = v.childForFieldName('function');
    return !!f && !(ctx.sema.callee(v) ?? '').startsWith('torch.') && (f.type === 'identifier' || f.type === 'attribute') && DEVICE_NAME.test(lastName(f));
  }
  return false;
}

function short(t: string): string {
  return t.length > 30 ? '…' : t;
}

function mapsToCuda(ctx: Parameters<NonNullable<ReturnType<typeof defineRule>['check']>>[0], v: Node): boolean {
  if (ctx.model.namesCuda(v)) return true;
  // `map_location=str(self.device)` (CycleGAN's base_model): the device's name
  if (v.type === 'call' && v.childForFieldName('function')?.text === 'str') {
    const args = callArgs(v).positional;
    return args.length === 1 && mapsToCuda(ctx, args[0]);
  }
  // `map_location="cuda:" + str(rank % torch.cuda.device_count())` (swav's restart_from_checkpoint): a CUDA device name built by concatenation
  if (v.type === 'binary_operator' && v.childForFieldName('operator')?.text === '+') {
    const left = v.childForFieldName('left');
    if (left?.type === 'string' && /^cuda(:|$)/.test(stringContent(left) ?? '')) return true;
    if (left?.type === 'binary_operator') return mapsToCuda(ctx, left);
  }
  if (v.type === 'lambda') return /\.cuda\(|['"]cuda/.test(v.childForFieldName('body')?.text ?? '');
  if (v.type === 'dictionary') return v.namedChildren.some((p) => p?.type === 'pair' && ctx.model.namesCuda(p.childForFieldName('value')));
  return false;
}

/**
 * `m.load_state_dict(torch.load(...))`, or `sd = torch.load(...)` whose value, followed through its uses after the load
 * in the same scope, goes only into `load_state_dict` (directly, `sd["model"]`, `sd.get("model")`, through one more
 * name, `state = sd["model"]`), besides membership tests (`"optimizer" in sd`) and metadata reads (`sd["epoch"]`): then
 * tensors mapped to the CPU are copied onto the parameters' device and nothing else sees them.
 */
function feedsLoadStateDict(ctx: RuleContext, call: Node): boolean {
  for (let p = call.parent; p && p.type !== 'expression_statement' && p.type !== 'block'; p = p.parent) {
    if (p.type === 'call' && /\.load_state_dict$/.test(p.childForFieldName('function')?.text ?? '')) return true;
    if (p.type === 'assignment') {
      const left = p.childForFieldName('left');
      if (left?.type !== 'identifier') return false;
      return onlyIntoLoadStateDict(ctx, left, 0);
    }
  }
  return false;
}

/** Checkpoint entries that hold run metadata, not tensors to place (`ckpt["epoch"]`, `ckpt["args"]`). */
const META_KEY = /^(\w*_)?(epoch|epochs|step|steps|iter|iteration|global_step|args|config|cfg|hparams|opt|version|arch|name)$/i;

function onlyIntoLoadStateDict(ctx: RuleContext, target: Node, depth: number): boolean {
  const scope = ctx.sema.enclosingFunction(target)?.id ?? -1;
  const uses = ctx.sema.identifiersNamed(target.text).filter((u) => u.startIndex >= target.endIndex && (ctx.sema.enclosingFunction(u)?.id ?? -1) === scope);
  let fed = false;
  for (const u of uses) {
    let e: Node = u;
    let meta = false;
    for (;;) {
      const par = e.parent;
      if (par?.type === 'subscript' && par.childForFieldName('value')?.id === e.id) {
        const key = par.childForFieldName('subscript');
        meta ||= key?.type === 'string' && META_KEY.test(key.text.replace(/^[rbuf]*['"]+|['"]+$/gi, ''));
        e = par;
      } else if (par?.type === 'attribute' && par.childForFieldName('object')?.id === e.id && par.childForFieldName('attribute')?.text === 'get' && par.parent?.type === 'call') {
        const key = callArgs(par.parent).positional[0];
        meta ||= key?.type === 'string' && META_KEY.test(key.text.replace(/^[rbuf]*['"]+|['"]+$/gi, ''));
        e = par.parent;
      } else break;
    }
    const par = e.parent;
    // a rebinding of the name ends what this load's value reaches
    if (par?.type === 'assignment' && par.childForFieldName('left')?.id === e.id) break;
    const holder = par?.type === 'keyword_argument' ? par.parent : par;
    const into = holder?.type === 'argument_list' && holder.parent?.type === 'call' ? holder.parent : null;
    if (into && /\.load_state_dict$/.test(into.childForFieldName('function')?.text ?? '')) {
      fed = true;
      continue;
    }
    if (par?.type === 'comparison_operator' && /\bin\b/.test(par.text.slice(0, e.startIndex - par.startIndex)) && e.id !== par.namedChildren[0]?.id) continue;
    if (meta) continue;
    if (par?.type === 'assignment' && par.childForFieldName('right')?.id === e.id && e.id !== u.id && depth < 2) {
      const left = par.childForFieldName('left');
      if (left?.type === 'identifier' && left.text !== target.text && onlyIntoLoadStateDict(ctx, left, depth + 1)) {
        fed = true;
        continue;
      }
    }
    return false;
  }
  return fed;
}
