import { defineRule } from '../../core/rule';
import { deleteStatement, lineEnd, lineStart } from '../../core/edits';
import type { Node } from '../../core/parse';
import type { FixDraft } from '../../core/rule';
import type { Edit, Severity } from '../../core/types';
import { callArgs, enclosingStatement, stringContent } from '../../core/semantics';
import type { Idioms } from '../../core/idioms';

const VARS = ['XLA_USE_BF16', 'XLA_DOWNCAST_BF16', 'XLA_USE_FP16', 'XLA_DOWNCAST_FP16', 'XLA_USE_32BIT_LONG'];
const VAR_RE = /\b(XLA_USE_BF16|XLA_DOWNCAST_BF16|XLA_USE_FP16|XLA_DOWNCAST_FP16|XLA_USE_32BIT_LONG)\b/g;
const OFF = /^['"]?(0|false|False|FALSE|no|)['"]?$/;

function describe(name: string, idiom: Idioms): { message: string; severity: Severity } {
  // every one of them prints a notice from torch_xla/csrc/dtype.cpp at v2.4.0 (lines 14-61); the FP16 pair
  // also warns at import from torch_xla/__init__.py v2.5.0:183 (_check_deprecated_env_var)
  const since = '2.4';
  const severity: Severity = idiom.profile === 'torch_xla' && !idiom.at(since) ? 'info' : 'warning';
  const instead = /32BIT_LONG/.test(name)
    ? 'int64 index tensors are fine on TPU, so drop it'
    : 'cast the model with `model.to(torch.bfloat16)` or use bf16 autocast instead';
  return { severity, message: `\`${name}\` is deprecated in torch_xla (a notice is printed since ${since}): ${instead}` };
}

/** Removes one `pair` of a dictionary literal with its separating comma. */
function removePair(pair: Node): Edit | null {
  const dict = pair.parent;
  if (!dict || dict.type !== 'dictionary') return null;
  const items = dict.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
  const i = items.findIndex((c) => c.id === pair.id);
  if (items.length === 1) return { start: dict.startIndex + 1, end: dict.endIndex - 1, text: '' };
  if (i < items.length - 1) return { start: pair.startIndex, end: items[i + 1].startIndex, text: '' };
  return { start: items[i - 1].endIndex, end: pair.endIndex, text: '' };
}

/** Deletes a whole line (with its newline), staying inside [lo, hi) (a notebook cell). */
function deleteLine(text: string, offset: number, lo = 0, hi = text.length): Edit {
  const s = lineStart(text, offset);
  let e = lineEnd(text, offset);
  if (e < hi && text.charCodeAt(e) === 13) e++;
  if (e < hi && text.charCodeAt(e) === 10) return { start: s, end: e + 1, text: '' };
  // last line (of the file or cell): remove the newline before it instead
  if (s > lo) return { start: s - 2 >= lo && text.charCodeAt(s - 2) === 13 ? s - 2 : s - 1, end: e, text: '' };
  return { start: s, end: e, text: '' };
}

/**
 * Finding and fix for a shell-like occurrence `NAME=value` on one line: the whole line goes when
 * it only sets variables (`export NAME=1`, `ENV NAME=1`, `NAME=1`), the `NAME=value ` token goes
 * when it prefixes a command (`NAME=1 python train.py`).
 */
function shellLike(text: string, start: number, name: string, lo = 0, hi = text.length): { off: boolean; edits: Edit[] | null } {
  const ls = lineStart(text, start);
  const le = lineEnd(text, start);
  const line = text.slice(ls, le);
  const col = start - ls;
  const after = line.slice(col + name.length);
  const m = /^(?:=|[ \t]+(?=\S))("[^"]*"|'[^']*'|\S*)/.exec(after);
  const value = m ? m[1] : '';
  const off = OFF.test(value);
  const before = line.slice(0, col);
  const rest = after.slice(m ? m[0].length : 0);
  if (/^[ \t]*(export[ \t]+|ENV[ \t]+|%env[ \t]+|setenv[ \t]+)?$/.test(before) && /^[ \t]*(#.*)?$/.test(rest)) return { off, edits: [deleteLine(text, start, lo, hi)] };
  if (m && m[0].startsWith('=') && /(^|[ \t!])$/.test(before) && /^[ \t]+\S/.test(rest)) {
    const ws = /^[ \t]+/.exec(rest)![0].length;
    return { off, edits: [{ start, end: start + name.length + m[0].length + ws, text: '' }] };
  }
  return { off, edits: null };
}

export default defineRule({
  id: 'TPU305',
  name: 'precision-env-var',
  title: 'Deprecated precision environment variables',
  severity: 'warning',
  step: 5,
  effort: 1,
  message: 'Deprecated torch_xla precision environment variable',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Remove the variable' },
  triggers: VARS,
  profiles: ['torch_xla'],
  textKinds: ['shell', 'dotenv', 'dockerfile', 'yaml'],
  docs: {
    what:
      'Checks for `XLA_USE_BF16`, `XLA_DOWNCAST_BF16`, `XLA_USE_FP16`, `XLA_DOWNCAST_FP16` and `XLA_USE_32BIT_LONG` being set: `os.environ[...] = ...`, ' +
      '`os.environ.setdefault`, `os.putenv`, `env={...}`/`os.environ.update({...})` dicts, notebook `%env` and `!VAR=1 python …` lines, shell scripts, `.env` files, ' +
      'Dockerfile `ENV` and launch YAML. Setting one to `0`/`false` is not flagged, nor is reading it.',
    why:
      '`XLA_USE_BF16` and `XLA_DOWNCAST_BF16` print "will be deprecated after the 2.6 release, please convert your model to bf16 directly" (DTYPE:11-31, since 2.4, commit af51f06); ' +
      '`XLA_USE_32BIT_LONG` prints the same kind of notice, and so do `XLA_USE_FP16`/`XLA_DOWNCAST_FP16` (dtype.cpp at v2.4.0:25, 49), which also warn at import since 2.5 (`_check_deprecated_env_var`, torch_xla/__init__.py v2.5.0:183; INIT:175-186 at v2.9.0). ' +
      'With `XLA_USE_BF16` tensors read back to the host are upcast to f32 (DTYPE `MaybeUpcastToHostTorchType`), while an explicit bf16 model returns bf16 on `.cpu()`.',
    example: 'os.environ["XLA_USE_BF16"] = "1"\n# run.sh\nexport XLA_USE_BF16=1',
    useInstead: 'model = model.to(torch.bfloat16)            # all-bf16\n# or mixed precision:\nwith torch.autocast("xla", dtype=torch.bfloat16):\n    loss = crit(model(x), y)',
    fixSafety:
      'Unsafe: removing the variable switches the run back to float32 until the model is cast to bf16 or wrapped in bf16 autocast, and values read back with `.cpu()` stay bf16 ' +
      '(add `.float()` before `.numpy()`: NumPy has no bf16). YAML entries are reported without a fix.',
    sources: [
      'DTYPE (torch_xla/csrc/dtype.cpp:11-43): deprecation notices for XLA_USE_BF16, XLA_DOWNCAST_BF16, XLA_USE_32BIT_LONG; commits af51f06, 1812817',
      'INIT (torch_xla/__init__.py:175-186 at v2.9.0; :183-190 at v2.5.0, absent at v2.4.0): XLA_USE_FP16 / XLA_DOWNCAST_FP16 warning at import (2.5+)',
      'torch_xla/csrc/dtype.cpp at v2.4.0:14-61: "will be deprecated after the 2.4 release" for XLA_USE_BF16, XLA_USE_FP16, XLA_DOWNCAST_BF16, XLA_DOWNCAST_FP16, XLA_USE_32BIT_LONG',
      'Catalog §3 (deprecated and removed torch_xla APIs)',
    ],
    torchtpu: 'Not run under the torchtpu profile: these variables belong to torch_xla and do nothing for the native `tpu` device (set the dtype in the model code).',
  },
  check(ctx) {
    const reported = new Set<number>();
    for (const s of ctx.sema.nodes('string')) {
      const name = stringContent(s) ?? '';
      if (!VARS.includes(name)) continue;
      let value: Node | null = null;
      let edits: Edit[] | null = null;
      const p = s.parent;
      // os.environ["X"] = v
      if (p?.type === 'subscript' && p.childForFieldName('subscript')?.id === s.id && ctx.sema.resolve(p.childForFieldName('value')) === 'os.environ') {
        const assign = p.parent?.type === 'assignment' && p.parent.childForFieldName('left')?.id === p.id ? p.parent : null;
        if (!assign) continue;
        value = assign.childForFieldName('right');
        const stmt = enclosingStatement(assign);
        if (stmt.type === 'expression_statement' && stmt.namedChildren[0]?.id === assign.id) edits = [deleteStatement(ctx.text, stmt)];
      } else if (p?.type === 'argument_list' && p.parent?.type === 'call') {
        const call = p.parent;
        const q = ctx.sema.callee(call) ?? '';
        if (q !== 'os.environ.setdefault' && q !== 'os.putenv') continue;
        const { positional } = callArgs(call);
        if (positional[0]?.id !== s.id) continue;
        value = positional[1] ?? null;
        const stmt = enclosingStatement(call);
        if (stmt.type === 'expression_statement' && stmt.namedChildren[0]?.id === call.id) edits = [deleteStatement(ctx.text, stmt)];
      } else if (p?.type === 'pair' && p.childForFieldName('key')?.id === s.id) {
        value = p.childForFieldName('value');
        const e = removePair(p);
        edits = e ? [e] : null;
      } else continue;
      if (value?.type === 'string' && OFF.test(stringContent(value) ?? 'x')) continue;
      if (value?.type === 'integer' && value.text === '0') continue;
      if (value?.type === 'false') continue;
      const d = describe(name, ctx.idiom);
      reported.add(s.startIndex);
      const fix: FixDraft | null = edits ? { title: `Remove \`${name}\``, edits } : null;
      ctx.report(s, { ...d, fix });
    }
    // notebook %env / !VAR=1 lines
    for (const m of ctx.notebook?.magics ?? []) {
      VAR_RE.lastIndex = 0;
      for (let hit = VAR_RE.exec(m.text); hit; hit = VAR_RE.exec(m.text)) {
        const start = m.start + hit.index;
        const isEnv = /^[ \t]*%env\b/.test(m.text);
        // the analysed text masks magics (`%env` → `#env`): read the original line
        const sl = shellLike(m.text, hit.index, hit[1]);
        if (sl.off) continue;
        if (!isEnv && m.kind !== '!') continue;
        const span = ctx.notebook!.spans.find((sp) => sp.start <= start && start < sp.end);
        let edits: Edit[] | null = null;
        if (sl.edits) {
          const e = sl.edits[0];
          edits = e.start === 0 && e.end >= m.text.length ? [deleteLine(ctx.text, m.start, span?.start, span?.end)] : sl.edits.map((x) => ({ ...x, start: x.start + m.start, end: x.end + m.start }));
        }
        ctx.report({ start, end: start + hit[1].length }, { ...describe(hit[1], ctx.idiom), fix: edits ? { title: `Remove \`${hit[1]}\``, edits } : null });
      }
    }
  },
  checkText(ctx) {
    VAR_RE.lastIndex = 0;
    for (let hit = VAR_RE.exec(ctx.text); hit; hit = VAR_RE.exec(ctx.text)) {
      const start = hit.index;
      const ls = lineStart(ctx.text, start);
      const line = ctx.text.slice(ls, lineEnd(ctx.text, start));
      if (/^[ \t]*#/.test(line) || line.slice(0, start - ls).includes('#')) continue;
      const name = hit[1];
      let edits: Edit[] | null = null;
      if (ctx.fileKind === 'yaml') {
        // `XLA_USE_BF16: "1"` or `- name: XLA_USE_BF16` + `value: "1"`
        const v = /:[ \t]*("[^"]*"|'[^']*'|\S*)/.exec(line.slice(start - ls + name.length));
        if (v && v[1] && OFF.test(v[1])) continue;
      } else {
        const sl = shellLike(ctx.text, start, name);
        if (sl.off) continue;
        edits = sl.edits;
      }
      ctx.report({ start, end: start + name.length }, { ...describe(name, ctx.idiom), fix: edits ? { title: `Remove \`${name}\``, edits } : null });
    }
  },
});
