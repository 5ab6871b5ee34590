import { defineRule, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import { callArgs, enclosingStatement } from '../../core/semantics';
import { deleteStatement, replace, replaceRange } from '../../core/edits';
import { Idioms } from '../../core/idioms';
import type { Severity } from '../../core/types';
import { contentRange, envWrites, inCompatBranch, literal, xlaImportGuarded } from './runtime-util';

const { TORCH_XLA, XM, XR } = Idioms.imports;
const XLA_BACKEND = { module: 'torch_xla.distributed.xla_backend' };

/** Severity in the target version: null before `deprecated`, warning from it, error from `removed`. */
function status(ctx: RuleContext, deprecated: string, removed?: string): Severity | null {
  if (removed && ctx.idiom.at(removed)) return 'error';
  return ctx.idiom.at(deprecated) ? 'warning' : null;
}

/** Runtime functions `torch_xla.experimental.pjrt` had that live on in `torch_xla.runtime` (PJRT:16-21). */
const PJRT_TO_XR = new Set(['world_size', 'global_ordinal', 'local_ordinal', 'addressable_device_count', 'global_device_count', 'device_type', 'using_pjrt']);
/** Names `torch_xla.distributed.spmd` re-exports (torch_xla/distributed/spmd/__init__.py). */
const SPMD_EXPORTS = new Set([
  'XLAShard', 'XLAShardedTensor', 'Mesh', 'HybridMesh', 'ShardingType', 'ShardingSpec', 'XLAPatchedLinear', 'mark_sharding',
  'clear_sharding', 'wrap_if_sharded', 'xla_patched_nn_linear_forward', 'set_global_mesh', 'get_global_mesh',
]);
const LEGACY_DYNAMO: Record<string, string> = { aot_torchxla_trace_once: 'openxla', torchxla_trace_once: 'openxla_eval' };

export default defineRule({
  id: 'TPU111',
  name: 'deprecated-xla-api',
  title: 'Deprecated or removed torch_xla API',
  severity: 'warning',
  step: 10,
  effort: 1,
  message: 'This torch_xla API is deprecated or removed in the target version',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use the current torch_xla API' },
  triggers: ['torch_xla', 'xla_device', 'mark_step', 'xrt_world_size', 'get_ordinal', 'pjrt', 'torchxla_trace_once', 'XLA_USE_SPMD', 'xla_sharding'],
  profiles: ['torch_xla'],
  docs: {
    what:
      'Checks for torch_xla APIs that are deprecated or removed in the target torch_xla version (catalog §3), through import aliases: ' +
      '`xm.xla_device()`, `xm.mark_step()`, `xm.xrt_world_size()`, `xm.get_ordinal()`, `xm.parse_xla_device()`, `torch_xla.experimental.compile`, ' +
      '`torch_xla.experimental.pjrt`, `torch_xla.experimental.xla_sharding`/`xla_sharded_tensor`, `init_method="pjrt://"`, `torch_xla.amp.GradScaler`, ' +
      'the legacy dynamo backends `torchxla_trace_once`/`aot_torchxla_trace_once`. Each construct is reported once, under the more specific rule: `xm.xrt_world_size()`/`xm.get_ordinal()` by TPU503, `xmp.spawn(nprocs=N>1)` by TPU502, `XLA_USE_SPMD` by TPU509, the precision variables by TPU305. ' +
      'Severity follows the target version: warning where the API is deprecated, error where it is removed, silent before it was deprecated. ' +
      'Calls under a version switch (`hasattr(torch_xla, "sync")`, `try/except AttributeError`) are left alone.',
    why:
      '`xm.xla_device` and `xm.mark_step` are `@deprecated` since 2.8 ("Use torch_xla.device instead", "Use torch_xla.sync instead"). ' +
      '`xm.xrt_world_size`, `xm.get_ordinal` and `xm.parse_xla_device` were deprecated in 2.5 ("will be removed in release 2.7") and are gone in 2.7, as is `torch_xla.experimental.compile`. ' +
      '`torch_xla.experimental.pjrt` and `torch_xla.experimental.xla_sharding` were deleted in 2.5; `torch_xla.amp.GradScaler` in 2.9. ' +
      'Under PJRT `xmp.spawn` accepts only `nprocs=None` or 1: every local device gets a process. `pjrt://` was renamed `xla://` in 2.1, and `XLA_USE_SPMD` is superseded by `xr.use_spmd()`.',
    example: 'import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nworld = xm.xrt_world_size()\n...\nxm.mark_step()',
    useInstead: 'import torch_xla\nimport torch_xla.runtime as xr\n\ndevice = torch_xla.device()\nworld = xr.world_size()\n...\ntorch_xla.sync()',
    fixSafety:
      'Safe for pure renames whose replacement exists in the target version (`torch_xla.device()` ≥ 2.3, `torch_xla.sync()` ≥ 2.4 and its `wait` ≥ 2.5, `torch_xla.compile` ≥ 2.5, `xr.world_size()`, `xr.global_ordinal()`, ' +
      '`torch_xla.distributed.spmd`, `xla://`, `openxla`/`openxla_eval`). Unsafe: dropping `nprocs` from `xmp.spawn` (one process per local device) and replacing `XLA_USE_SPMD` with `xr.use_spmd()` (must run before any XLA tensor exists). ' +
      'No fix for `parse_xla_device` and `torch_xla.amp.GradScaler` (bf16 on TPU needs no loss scaling, see TPU303), or when torch_xla is only imported under a guard.',
    sources: [
      'pytorch/xla torch_xla/core/xla_model.py@fa72136: `xrt_world_size`/`get_ordinal`/`parse_xla_device = deprecated(..., "will be removed in release 2.7")`',
      'pytorch/xla torch_xla/torch_xla.py@022ecde (commit deprecating xm.xla_device): `device(index)`, `sync(wait=False, reset_scope=True)`, `compile`, `launch`',
      'pytorch/xla docs troubleshooting: "[PyTorch v2.8+] DeprecationWarning: Use torch_xla.device instead" / "Use torch_xla.sync instead"; "[v2.7+] AttributeError … xrt_world_size"',
      'pytorch/xla torch_xla/distributed/spmd/__init__.py@05ad6e4 (re-exports Mesh, mark_sharding, ShardingSpec, XLAShardedTensor, …)',
      'catalog §3: XM:121-138, XM:1030-1032, TX:78, commits 022ecde, bbafe35, 7f8ef79, da7fdca, f1fe8bc, ed15ea1, d028176, 647804c; PJRT:16-21; XR:200-203; XPJRT:204-209',
      'pytorch/pytorch torch/_dynamo/backends/torchxla.py (`openxla`, `openxla_eval`; legacy `aot_torchxla_trace_once` registered as experimental)',
    ],
    torchtpu: 'Not run under the torchtpu profile: deprecations and removals of torch_xla\'s own APIs say nothing about the native `tpu` device, and their torch_xla replacements do not apply there.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const guarded = xlaImportGuarded(sema);
    /** A torch_xla snippet, unless the profile has none or torch_xla is only imported under a guard. */
    const xla = (text: string, ...imports: (typeof TORCH_XLA)[]) => (guarded ? null : ctx.idiom.xlaAlways(text, ...imports));

    // --- calls and references
    const handled = new Set<number>();
    for (const call of sema.nodes('call')) {
      const fnNode = call.childForFieldName('function');
      const callee = sema.callee(call);
      if (!callee || !fnNode) continue;
      if (inCompatBranch(call)) {
        handled.add(fnNode.id);
        continue;
      }
      const { positional, keywords, list } = callArgs(call);
      const argText = list ? list.text.slice(1, -1).trim() : '';
      switch (callee) {
        case 'torch_xla.core.xla_model.xla_device': {
          const sev = status(ctx, '2.8');
          handled.add(fnNode.id);
          if (!sev) break;
          const n = positional[0]?.text ?? (keywords.get('n') ? keywords.get('n')!.childForFieldName('value')!.text : '');
          const snip = ctx.idiom.at('2.3') ? xla(`torch_xla.device(${n})`, TORCH_XLA) : null;
          ctx.report(call, {
            severity: sev,
            message: `\`${fnNode.text}()\` is deprecated since torch_xla 2.8 (DeprecationWarning "Use torch_xla.device instead"); use \`torch_xla.device()\``,
            fix: snip ? { title: `Replace with \`${snip.text}\``, applicability: 'safe', edits: [replace(call, snip.text)], imports: snip.imports } : null,
          });
          break;
        }
        case 'torch_xla.core.xla_model.mark_step': {
          const sev = status(ctx, '2.8');
          handled.add(fnNode.id);
          if (!sev) break;
          const ok = argText === '' ? ctx.idiom.at('2.4') : ctx.idiom.at('2.5');
          const snip = ok ? xla(`torch_xla.sync(${argText})`, TORCH_XLA) : null;
          ctx.report(call, {
            severity: sev,
            message: `\`${fnNode.text}()\` is deprecated since torch_xla 2.8 (DeprecationWarning "Use torch_xla.sync instead"); use \`torch_xla.sync()\``,
            fix: snip ? { title: `Replace with \`${snip.text}\``, applicability: 'safe', edits: [replace(call, snip.text)], imports: snip.imports } : null,
          });
          break;
        }
        case 'torch_xla.core.xla_model.xrt_world_size':
        case 'torch_xla.core.xla_model.get_ordinal':
        case 'torch_xla.core.xla_model.parse_xla_device': {
          const sev = status(ctx, '2.5', '2.7');
          handled.add(fnNode.id);
          // world size and rank are TPU503's: each construct is reported once, under the more specific rule
          if (!sev || !callee.endsWith('.parse_xla_device')) break;
          const name = callee.split('.').pop()!;
          const repl = name === 'xrt_world_size' ? 'xr.world_size()' : name === 'get_ordinal' ? 'xr.global_ordinal()' : null;
          const snip = repl ? xla(repl, XR) : null;
          const verb = sev === 'error' ? `was removed in torch_xla 2.7 (target ${ctx.idiom.version})` : 'is deprecated since torch_xla 2.5 and removed in 2.7';
          ctx.report(call, {
            severity: sev,
            message: `\`${fnNode.text}()\` ${verb}; ${repl ? `use \`${repl}\`` : 'parse the device string yourself (no public replacement)'}`,
            fix: snip ? { title: `Replace with \`${snip.text}\``, applicability: 'safe', edits: [replace(call, snip.text)], imports: snip.imports } : null,
          });
          break;
        }
        case 'torch_xla.distributed.xla_multiprocessing.spawn':
          // `xmp.spawn(nprocs=N>1)` is TPU502's (launchers)
          handled.add(fnNode.id);
          break;
        case 'torch.compile':
        case 'torch._dynamo.optimize': {
          const b = keywords.get('backend')?.childForFieldName('value') ?? (callee === 'torch._dynamo.optimize' ? positional[0] : undefined);
          const name = literal(b);
          if (!b || !name || !(name in LEGACY_DYNAMO)) break;
          const to = LEGACY_DYNAMO[name];
          const r = contentRange(b);
          ctx.report(b, {
            severity: 'warning',
            message: `dynamo backend "${name}" is a legacy torch_xla backend; use "${to}"`,
            fix: { title: `Use backend "${to}"`, applicability: 'safe', edits: [replaceRange(r.start, r.end, to)] },
          });
          break;
        }
        default:
          break;
      }
    }

    // init_method='pjrt://'
    for (const kw of sema.nodes('keyword_argument')) {
      if (kw.childForFieldName('name')?.text !== 'init_method') continue;
      const val = kw.childForFieldName('value');
      if (literal(val) !== 'pjrt://' || !val) continue;
      const snip = xla("'xla://'", XLA_BACKEND);
      const r = contentRange(val);
      ctx.report(val, {
        severity: 'warning',
        message: '`init_method="pjrt://"` was renamed to `"xla://"` in torch_xla 2.1 (registered by `import torch_xla.distributed.xla_backend`)',
        fix: snip ? { title: 'Use `init_method="xla://"`', applicability: 'safe', edits: [replaceRange(r.start, r.end, 'xla://')], imports: snip.imports } : null,
      });
    }

    // references: attribute chains and names resolving to removed modules or symbols
    // only names rooted in a torch_xla import can resolve to a deprecated torch_xla API
    const roots = new Set([...sema.aliases].filter(([, full]) => full === 'torch_xla' || full.startsWith('torch_xla.')).map(([alias]) => alias));
    // the leading name of the node's text, read at its start (no slice of every attribute chain's text)
    const lead = /[A-Za-z_]\w*/y;
    const rooted = (n: Node) => {
      if (n.type === 'identifier') return roots.has(n.text);
      lead.lastIndex = n.startIndex;
      const m = lead.exec(ctx.text);
      return !!m && roots.has(m[0]);
    };
    const rootIds = [...roots].flatMap((r) => sema.identifiersNamed(r));
    const refs = (roots.size ? [...sema.nodes('attribute'), ...rootIds.sort((a, b) => a.startIndex - b.startIndex)] : []).filter((n) => {
      if (!rooted(n) || handled.has(n.id)) return false;
      const p = n.parent;
      if (!p) return false;
      if (p.type === 'attribute' && p.childForFieldName('object')?.id === n.id) return false; // part of a longer chain
      if (n.type === 'identifier' && p.type === 'attribute' && p.childForFieldName('attribute')?.id === n.id) return false;
      if (/import|dotted_name|aliased_import|keyword_argument|parameters/.test(p.type) && !(p.type === 'keyword_argument' && p.childForFieldName('value')?.id === n.id)) return false;
      return true;
    });
    const pjrtRefs = new Map<string, Node[]>();
    for (const n of refs) {
      const fq = sema.resolve(n);
      if (!fq) continue;
      if (inCompatBranch(n)) continue;
      if (fq === 'torch_xla.experimental.compile' && n.type === 'attribute') {
        const sev = status(ctx, '2.5', '2.7');
        if (!sev) continue;
        const snip = xla('torch_xla.compile', TORCH_XLA);
        ctx.report(n, {
          severity: sev,
          message: `\`${n.text}\` ${sev === 'error' ? 'was removed in torch_xla 2.7' : 'is deprecated'}; use \`torch_xla.compile\``,
          fix: snip ? { title: 'Use `torch_xla.compile`', applicability: 'safe', edits: [replace(n, snip.text)], imports: snip.imports } : null,
        });
      } else if (fq.startsWith('torch_xla.experimental.pjrt.')) {
        const alias = n.type === 'attribute' ? rootName(n) : n.text;
        pjrtRefs.set(alias, [...(pjrtRefs.get(alias) ?? []), n]);
        const sev = status(ctx, '2.3', '2.5');
        if (!sev) continue;
        const fn = fq.slice('torch_xla.experimental.pjrt.'.length);
        const repl = PJRT_TO_XR.has(fn) ? { text: `xr.${fn}`, spec: XR } : fn === 'broadcast_master_param' ? { text: 'xm.broadcast_master_param', spec: XM } : null;
        const snip = repl ? xla(repl.text, repl.spec) : null;
        ctx.report(n, {
          severity: sev,
          message: `\`torch_xla.experimental.pjrt\` ${sev === 'error' ? 'was deleted in torch_xla 2.5' : 'is deprecated (moved in 2.1)'}; ${repl ? `use \`${repl.text}\`` : 'use `torch_xla.runtime`'}`,
          fix: snip ? { title: `Use \`${snip.text}\``, applicability: 'safe', edits: [replace(n, snip.text)], imports: snip.imports } : null,
        });
      } else if (fq === 'torch_xla.amp.GradScaler' && n.type === 'attribute') {
        if (!ctx.idiom.at('2.9')) continue;
        ctx.report(n, {
          severity: 'error',
          message: '`torch_xla.amp.GradScaler` was removed in torch_xla 2.9; bf16 autocast on TPU needs no loss scaling',
        });
      }
    }

    // import statements of removed modules
    for (const imp of [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')]) {
      if (inCompatBranch(imp)) continue;
      const mod = imp.type === 'import_from_statement' ? imp.childForFieldName('module_name')?.text ?? '' : '';
      const names = imp.type === 'import_from_statement' ? imp.childrenForFieldName('name').filter((c): c is Node => !!c) : imp.namedChildren.filter((c): c is Node => !!c);
      const nameOf = (c: Node) => (c.type === 'aliased_import' ? c.childForFieldName('name')?.text ?? '' : c.text);
      const aliasOf = (c: Node) => (c.type === 'aliased_import' ? c.childForFieldName('alias')?.text ?? '' : c.text.split('.')[0]);
      for (const c of names) {
        const full = mod ? `${mod}.${nameOf(c)}` : nameOf(c);
        if (/^torch_xla\.experimental\.(xla_sharding|xla_sharded_tensor)$/.test(full) || /^torch_xla\.experimental\.(xla_sharding|xla_sharded_tensor)\./.test(mod + '.')) {
          const sev = status(ctx, '2.3', '2.5');
          if (!sev) continue;
          reportSharding(ctx, imp, c, mod, full, sev, xla);
        } else if (full === 'torch_xla.experimental.pjrt') {
          const sev = status(ctx, '2.3', '2.5');
          if (!sev) continue;
          const alias = aliasOf(c);
          const stillUsed = (pjrtRefs.get(alias) ?? []).length > 0 || (alias === 'torch_xla' && /torch_xla\.experimental\.pjrt\b/.test(ctx.text.slice(imp.endIndex)));
          const sole = names.length === 1;
          ctx.report(c, {
            severity: sev,
            message: `\`torch_xla.experimental.pjrt\` ${sev === 'error' ? 'was deleted in torch_xla 2.5' : 'is deprecated (moved in 2.1)'}; its functions live in \`torch_xla.runtime\``,
            fix: !stillUsed && sole ? { title: 'Remove the unused import', applicability: 'safe', edits: [deleteStatement(ctx.text, enclosingStatement(imp))] } : null,
          });
        } else if (full === 'torch_xla.experimental.compile' && mod === 'torch_xla.experimental') {
          const sev = status(ctx, '2.5', '2.7');
          if (!sev) continue;
          const sole = names.length === 1;
          const snip = sole ? xla(`from torch_xla import ${c.text}`) : null;
          ctx.report(c, {
            severity: sev,
            message: `\`torch_xla.experimental.compile\` ${sev === 'error' ? 'was removed in torch_xla 2.7' : 'is deprecated'}; use \`torch_xla.compile\``,
            fix: snip ? { title: 'Import `compile` from `torch_xla`', applicability: 'safe', edits: [replace(imp, snip.text)] } : null,
          });
        } else if (full === 'torch_xla.amp.GradScaler' && mod === 'torch_xla.amp' && ctx.idiom.at('2.9')) {
          ctx.report(c, {
            severity: 'error',
            message: '`torch_xla.amp.GradScaler` was removed in torch_xla 2.9; bf16 autocast on TPU needs no loss scaling',
          });
        }
      }
    }
  },
});

function rootName(n: Node): string {
  let cur: Node = n;
  while (cur.type === 'attribute') cur = cur.childForFieldName('object')!;
  return cur.text;
}


function reportSharding(
  ctx: RuleContext, imp: Node, c: Node, mod: string, full: string, sev: Severity,
  xla: (text: string) => { text: string } | null,
) {
  const sub = full.startsWith('torch_xla.experimental.xla_sharded_tensor') ? 'xla_sharded_tensor' : 'xla_sharding';
  let edit: { start: number; end: number; text: string } | null = null;
  if (imp.type === 'import_from_statement') {
    // from torch_xla.experimental.xla_sharding import Mesh, mark_sharding
    const modNode = imp.childForFieldName('module_name')!;
    const imported = imp.childrenForFieldName('name').filter((x): x is Node => !!x).map((x) => (x.type === 'aliased_import' ? x.childForFieldName('name')?.text ?? '' : x.text));
    if (mod === 'torch_xla.experimental') {
      // from torch_xla.experimental import xla_sharding as xs
      if (imp.childrenForFieldName('name').length === 1) {
        const alias = c.type === 'aliased_import' ? c.childForFieldName('alias')!.text : sub;
        const s = xla(`import torch_xla.distributed.spmd${sub === 'xla_sharding' ? '' : `.${sub}`} as ${alias}`);
        if (s && (sub === 'xla_sharding' ? usesOnlyExports(ctx, alias) : true)) edit = replace(imp, s.text);
      }
    } else {
      const target = imported.every((x) => SPMD_EXPORTS.has(x)) ? 'torch_xla.distributed.spmd' : `torch_xla.distributed.spmd.${sub}`;
      const s = xla(target);
      if (s) edit = replace(modNode, s.text);
    }
    if (c.id !== imp.childrenForFieldName('name')[0]?.id) return; // one finding per statement
  } else {
    const name = c.type === 'aliased_import' ? c.childForFieldName('name')! : c;
    const alias = c.type === 'aliased_import' ? c.childForFieldName('alias')?.text : null;
    const target = alias && sub === 'xla_sharding' && usesOnlyExports(ctx, alias) ? 'torch_xla.distributed.spmd' : `torch_xla.distributed.spmd.${sub}`;
    // a bare `import torch_xla.experimental.xla_sharding` is used through the full path: rename both
    const s = alias ? xla(target) : null;
    if (s) edit = replace(name, s.text);
  }
  const anchor = imp.type === 'import_from_statement' ? imp.childForFieldName('module_name')! : c;
  ctx.report(anchor, {
    severity: sev,
    message: `\`torch_xla.experimental.${sub}\` ${sev === 'error' ? 'was deleted in torch_xla 2.5' : 'is deprecated'}; import it from \`torch_xla.distributed.spmd\``,
    fix: edit ? { title: 'Import from `torch_xla.distributed.spmd`', applicability: 'safe', edits: [edit] } : null,
  });
}

/** Every `alias.X` reference names something `torch_xla.distributed.spmd` re-exports. */
function usesOnlyExports(ctx: RuleContext, alias: string): boolean {
  for (const a of ctx.sema.nodes('attribute')) {
    const obj = a.childForFieldName('object');
    if (obj?.type === 'identifier' && obj.text === alias && !SPMD_EXPORTS.has(a.childForFieldName('attribute')?.text ?? '')) return false;
  }
  return true;
}
