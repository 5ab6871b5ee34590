import { defineRule, type FixDraft, type TextContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { Idioms } from '../../core/idioms';
import type { Severity } from '../../core/types';
import { deleteStatement, replaceRange } from '../../core/edits';
import { contentRange, envWrites, textLines, wholeLine } from './runtime-util';

type Action = 'delete' | 'set-tpu' | 'xrt' | null;

interface Verdict {
  severity: Severity;
  message: string;
  action: Action;
}

const CUDA_KNOBS = /^(CUDA_VISIBLE_DEVICES|NCCL_\w+|CUBLAS_WORKSPACE_CONFIG|PYTORCH_CUDA_ALLOC_CONF|CUDA_LAUNCH_BLOCKING)$/;

/** What a variable assignment means on a TPU host, or null when it is fine (TPU_NUM_DEVICES and friends). */
function classify(name: string, value: string | null, idiom: Idioms): Verdict | null {
  const removed29 = idiom.at('2.9');
  // PJRT_DEVICE, GPU_NUM_DEVICES and XRT_* configure torch_xla's runtime: the native tpu device does not read them
  if (idiom.profile === 'torchtpu' && (name === 'PJRT_DEVICE' || name === 'GPU_NUM_DEVICES' || /^XRT_\w+$/.test(name))) return null;
  if (name === 'PJRT_DEVICE' && value !== null) {
    const v = value.trim().toUpperCase();
    if (v === 'CUDA' || v === 'GPU')
      return {
        severity: removed29 ? 'error' : 'warning',
        message: `\`PJRT_DEVICE=${value}\` selects XLA:CUDA, ${removed29 ? 'removed in torch_xla 2.9' : 'deprecated in torch_xla 2.8'}; use \`PJRT_DEVICE=TPU\``,
        action: 'set-tpu',
      };
    if (v === 'TPU_LEGACY')
      return { severity: removed29 ? 'error' : 'warning', message: '`PJRT_DEVICE=TPU_LEGACY` is the XRT runtime, deleted from torch_xla builds in 2.1; use `PJRT_DEVICE=TPU`', action: 'set-tpu' };
    return null;
  }
  if (name === 'GPU_NUM_DEVICES')
    return {
      severity: removed29 ? 'error' : 'warning',
      message: `\`GPU_NUM_DEVICES\` configures XLA:CUDA, ${removed29 ? 'removed in torch_xla 2.9' : 'deprecated in torch_xla 2.8'}; a TPU host needs no device count`,
      action: 'delete',
    };
  if (/^XRT_\w+$/.test(name))
    return { severity: removed29 ? 'error' : 'warning', message: `\`${name}\` configures the XRT runtime, deleted from torch_xla builds in 2.1 (PJRT is the default since 2.0); use \`PJRT_DEVICE=TPU\``, action: 'xrt' };
  if (CUDA_KNOBS.test(name)) {
    if (name === 'CUDA_VISIBLE_DEVICES' && (value === null || /^\s*(-1)?\s*$/.test(value))) return null; // hides GPUs: consistent with a TPU run
    const hint = name === 'CUDA_VISIBLE_DEVICES' ? ' (the TPU analogues are `TPU_VISIBLE_CHIPS`/`TPU_PROCESS_BOUNDS`)' : '';
    return { severity: 'warning', message: `\`${name}\` is a CUDA/NCCL setting with no effect on TPU${hint}`, action: 'delete' };
  }
  return null;
}

const GPU_TOOL_MSG = '`nvidia-smi` does not exist on a TPU host';
const NAME_TRIGGERS = ['PJRT_DEVICE', 'GPU_NUM_DEVICES', 'XRT_', 'CUDA_VISIBLE_DEVICES', 'NCCL_', 'CUBLAS_WORKSPACE_CONFIG', 'PYTORCH_CUDA_ALLOC_CONF', 'CUDA_LAUNCH_BLOCKING', 'nvidia-smi', 'pynvml', 'GPUtil'];

export default defineRule({
  id: 'TPU109',
  name: 'cuda-runtime-env',
  title: 'Environment and runtime-selection variables',
  severity: 'warning',
  step: 1,
  effort: 1,
  message: 'This environment variable targets CUDA or a removed torch_xla runtime',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Use the TPU runtime setting' },
  triggers: NAME_TRIGGERS,
  textKinds: ['shell', 'dockerfile', 'dotenv', 'yaml'],
  docs: {
    what:
      'Checks environment variables set in Python (`os.environ[...] =`, `setdefault`, `putenv`), notebook `%env`, shell scripts, Dockerfiles, `.env` files and YAML launchers: ' +
      '`PJRT_DEVICE=CUDA|GPU` and `GPU_NUM_DEVICES` (XLA:CUDA), XRT-era `XRT_*` variables and `PJRT_DEVICE=TPU_LEGACY`, the CUDA/NCCL knobs `CUDA_VISIBLE_DEVICES`, `NCCL_*`, ' +
      '`CUBLAS_WORKSPACE_CONFIG`, `PYTORCH_CUDA_ALLOC_CONF`, `CUDA_LAUNCH_BLOCKING`, and GPU tools (`nvidia-smi`, `pynvml`, `GPUtil`). ' +
      '`TPU_NUM_DEVICES` is not flagged (still honoured), nor `CUDA_VISIBLE_DEVICES=""`/`-1` (hides GPUs), nor settings under a branch that already has a TPU/XLA arm.',
    why:
      'XLA:CUDA was deprecated in torch_xla 2.8 and removed in 2.9, so `PJRT_DEVICE=CUDA` no longer selects anything. XRT was deleted from the main builds in 2.1; PJRT has been the default since 2.0. ' +
      'The CUDA and NCCL variables are inert on TPU and only make launch configs misleading; `nvidia-smi` and NVML bindings fail on a TPU VM. ' +
      'torch_xla picks TPU by itself when it finds libtpu and a TPU ("libtpu.so and TPU device found. Setting PJRT_DEVICE=TPU."), so an explicit `PJRT_DEVICE=TPU` is recommended rather than required.',
    example: 'export PJRT_DEVICE=CUDA\nexport GPU_NUM_DEVICES=8\nexport NCCL_DEBUG=INFO\nCUDA_VISIBLE_DEVICES=0,1 python train.py',
    useInstead: 'export PJRT_DEVICE=TPU\npython train.py',
    fixSafety:
      'Safe: setting `PJRT_DEVICE=TPU` in place of CUDA/GPU/TPU_LEGACY, removing `GPU_NUM_DEVICES`, and (torch_xla tpu-only style) removing the CUDA/NCCL knobs, which have no effect on TPU. ' +
      'Unsafe: replacing `XRT_TPU_CONFIG` with `PJRT_DEVICE=TPU` (XRT-era launchers usually need more changes). In dual-path style the CUDA knobs stay (they still matter on CUDA). ' +
      'GPU tools get no fix: `tpu-info` as an `nvidia-smi` replacement is unverified. YAML entries are only fixed in place (`PJRT_DEVICE` values).',
    sources: [
      'catalog TPU109/§3: XLA:CUDA deprecated 2.8 (commit 70de568), removed 2.9 (1bc7737, 647804c); XRT deleted 2.1 (f6409de); PJRT:14-31',
      'pytorch/xla torch_xla/runtime.py `_maybe_select_default_device` (XR:57-71: "libtpu.so and TPU device found. Setting PJRT_DEVICE=TPU.")',
      'XPJRT:204-209 (`xmp.spawn` error text: "Use the environment variable X_NUM_DEVICES (where X is CPU, TPU, NEURONCORE, etc)")',
      'PJRT:162 and torch_xla/core/xla_env_vars.py (`TPU_VISIBLE_CHIPS`, `TPU_PROCESS_BOUNDS`)',
    ],
    torchtpu: 'The native `tpu` device does not read torch_xla\'s runtime variables: under the torchtpu profile only the CUDA/NCCL variables are reported (`PJRT_DEVICE`, `GPU_NUM_DEVICES` and `XRT_*` are not).',
  },
  check(ctx) {
    const idiom = ctx.idiom;
    const tpuOnly = !idiom.dualPath;
    const xlaProfile = idiom.profile === 'torch_xla';
    const writes = envWrites(ctx);
    const setsPjrt = writes.some((w) => w.name === 'PJRT_DEVICE');
    const blocks: { writes: typeof writes; fixes: (FixDraft | null)[]; severity: Severity; message: string }[] = [];
    for (const w of [...writes].sort((a, b) => a.at.start - b.at.start)) {
      if (w.node && ctx.sema.inXlaAwareBranch(w.node)) continue;
      const verdict = classify(w.name, w.value, idiom);
      if (!verdict) continue;
      let fix = null;
      if (verdict.action === 'set-tpu' && xlaProfile) {
        if (w.valueNode?.type === 'string') {
          const r = contentRange(w.valueNode);
          fix = { title: 'Set `PJRT_DEVICE=TPU`', applicability: 'safe' as const, edits: [replaceRange(r.start, r.end, 'TPU')] };
        } else if (w.magic && w.valueRange) {
          fix = { title: 'Set `PJRT_DEVICE=TPU`', applicability: 'safe' as const, edits: [replaceRange(w.valueRange.start, w.valueRange.end, 'TPU')] };
        }
      } else if (verdict.action === 'xrt' && xlaProfile) {
        if (!setsPjrt && w.nameNode && w.valueNode?.type === 'string' && w.nameNode.type === 'string') {
          const n = contentRange(w.nameNode);
          const v = contentRange(w.valueNode);
          fix = { title: 'Set `PJRT_DEVICE=TPU` instead', applicability: 'unsafe' as const, edits: [replaceRange(n.start, n.end, 'PJRT_DEVICE'), replaceRange(v.start, v.end, 'TPU')] };
        } else if (setsPjrt) fix = deletion(ctx.text, w, 'unsafe');
      } else if (verdict.action === 'delete' && (w.name === 'GPU_NUM_DEVICES' || tpuOnly)) {
        fix = deletion(ctx.text, w, 'safe');
      }
      // a block of CUDA/NCCL tuning writes (`os.environ["NCCL_PROTO"] = ...` then `os.environ["NCCL_ALGO"] = ...`, adjacent
      // statements of one family, NCCL_* or CUDA_*): one problem, one finding on the first write; the others are related and the fix removes them all
      if (verdict.action === 'delete' && w.stmt) {
        const prev = blocks.length ? blocks[blocks.length - 1] : null;
        const last = prev?.writes[prev.writes.length - 1];
        if (prev && last?.stmt && prevStatement(w.stmt)?.id === last.stmt.id && prev.severity === verdict.severity && w.name.split('_')[0] === last.name.split('_')[0]) {
          prev.writes.push(w);
          prev.fixes.push(fix);
        } else {
          blocks.push({ writes: [w], fixes: [fix], severity: verdict.severity, message: verdict.message });
        }
        continue;
      }
      ctx.report(w.at, { severity: verdict.severity, message: verdict.message, fix });
    }
    for (const b of blocks) {
      const [first, ...rest] = b.writes;
      const all = b.fixes.every((f) => !!f);
      const fix = b.fixes.length > 1 && all
        ? { ...b.fixes[0]!, title: `Remove the ${b.fixes.length} CUDA/NCCL settings`, edits: b.fixes.flatMap((f) => f!.edits) }
        : all ? b.fixes[0] : null;
      const message = rest.length ? `${b.message}; so are the ${rest.length} settings after it (${rest.slice(0, 3).map((r) => `\`${r.name}\``).join(', ')}${rest.length > 3 ? ', …' : ''})` : b.message;
      ctx.report(first.at, {
        severity: b.severity,
        message,
        fix,
        related: rest.length ? rest.map((r) => ({ start: r.at.start, end: r.at.end, message: `\`${r.name}\`: the same CUDA/NCCL setting block` })) : undefined,
      });
    }

    // GPU tools: pynvml / GPUtil imports, nvidia-smi in subprocess strings and notebook shell lines
    for (const imp of [...ctx.sema.nodes('import_statement'), ...ctx.sema.nodes('import_from_statement')]) {
      const m = /^(?:import|from)\s+(pynvml|GPUtil|nvidia_smi)\b/.exec(imp.text);
      if (!m || ctx.sema.inXlaAwareBranch(imp)) continue;
      ctx.report(imp, { message: `\`${m[1]}\` reads NVIDIA GPUs through NVML, which a TPU host does not have` });
    }
    for (const s of ctx.sema.nodes('string')) {
      if (!/^\s*(sudo\s+)?nvidia-smi\b/.test(s.text.replace(/^[rbuf]*['"]{1,3}/i, ''))) continue;
      if (s.parent?.type !== 'argument_list' && s.parent?.parent?.type !== 'argument_list') continue;
      if (ctx.sema.inXlaAwareBranch(s)) continue;
      ctx.report(s, { message: GPU_TOOL_MSG });
    }
    for (const m of ctx.notebook?.magics ?? []) {
      const mm = /^([ \t]*![ \t]*)(nvidia-smi\b)/.exec(m.text) ?? /^([ \t]*%(?:sx|system)[ \t]+)(nvidia-smi\b)/.exec(m.text);
      if (!mm) continue;
      ctx.report({ start: m.start + mm[1].length, end: m.start + mm[1].length + mm[2].length }, { message: GPU_TOOL_MSG });
    }
  },
  checkText(ctx) {
    const lines = textLines(ctx.text);
    const kind = ctx.fileKind;
    const tpuOnly = !ctx.idiom.dualPath;
    const xlaProfile = ctx.idiom.profile === 'torch_xla';
    const setsPjrt = /\bPJRT_DEVICE\b/.test(ctx.text);
    const cont = (i: number) => i >= 0 && /\\\s*$/.test(lines[i].text);
    for (const line of lines) {
      const code = stripComment(line.text, kind);
      if (!code.trim()) continue;
      const found: Found[] = [];
      if (kind === 'yaml') {
        // KEY: value   (mapping)          - KEY=value   (list)          - name: KEY  (k8s env, value on the next line)
        const kv = /^(\s*-?\s*)([A-Z][A-Z0-9_]*)\s*:\s*(["']?)([^"'#\s]*)\3\s*$/.exec(code);
        if (kv) found.push(at(kv[2], kv[4], line.start + kv[1].length, line.start + code.indexOf(kv[4], kv[1].length + kv[2].length + 1), false, false));
        for (const m of code.matchAll(/(^|[\s"'\[,-])([A-Z][A-Z0-9_]*)=("[^"]*"|'[^']*'|[^\s"',\]]*)/g)) push(found, m, line.start, false, false);
        const k8s = /^(\s*-\s*name\s*:\s*)(["']?)([A-Z][A-Z0-9_]*)\2\s*$/.exec(code);
        if (k8s) {
          const next = lines[line.index + 1];
          const vm = next ? /^\s*value\s*:\s*(["']?)([^"'#]*?)\1\s*$/.exec(next.text) : null;
          found.push(at(k8s[3], vm ? vm[2] : '', line.start + k8s[1].length + k8s[2].length, -1, false, false));
        }
      } else {
        const whole =
          kind === 'dockerfile'
            ? /^\s*(ENV|ARG)\s+[A-Za-z_]\w*(=("[^"]*"|'[^']*'|\S*)|\s+\S.*)\s*$/i.test(code) && !/^\s*(ENV|ARG)\s+\S+=\S*\s+\S/i.test(code)
            : /^\s*(export\s+)?[A-Za-z_]\w*=("[^"]*"|'[^']*'|[^\s;&|]*)\s*$/.test(code);
        const dockerSpace = kind === 'dockerfile' ? /^(\s*ENV\s+)([A-Za-z_]\w*)\s+(["']?)(.*?)\3\s*$/i.exec(code) : null;
        if (dockerSpace && !dockerSpace[2].includes('=')) {
          const vStart = line.start + code.lastIndexOf(dockerSpace[4] || ' ');
          found.push(at(dockerSpace[2], dockerSpace[4], line.start + dockerSpace[1].length, vStart, true, false));
        } else {
          for (const m of code.matchAll(/(^|[\s;&|(`])(?:export\s+|ENV\s+|ARG\s+|env\s+)?([A-Za-z_]\w*)=("[^"]*"|'[^']*'|[^\s;&|)`]*)/g)) {
            const prefix = m.index === 0 && /^\s*[A-Za-z_]\w*=\S*\s+[a-z./]/.test(code) && !/^\s*export\b/.test(code);
            push(found, m, line.start, whole && !cont(line.index - 1) && !cont(line.index), prefix && !cont(line.index - 1));
          }
        }
        const smi = /(^|[\s;&|(`$])(nvidia-smi)\b/.exec(code.replace(/"[^"]*"|'[^']*'/g, (q) => ' '.repeat(q.length)));
        if (smi) ctx.report({ start: line.start + smi.index + smi[1].length, end: line.start + smi.index + smi[1].length + smi[2].length }, { message: GPU_TOOL_MSG });
      }
      for (const f of found) {
        const verdict = classify(f.name, f.value, ctx.idiom);
        if (!verdict) continue;
        let fix = null;
        if (verdict.action === 'set-tpu' && xlaProfile && f.valueStart >= 0) {
          fix = { title: 'Set `PJRT_DEVICE=TPU`', applicability: 'safe' as const, edits: [replaceRange(f.valueStart, f.valueEnd, 'TPU')] };
        } else if (kind !== 'yaml' && (f.whole || f.prefix)) {
          const del = f.whole ? wholeLine(ctx.text, line.start, line.end) : prefixRange(ctx.text, f.nameAt);
          if (verdict.action === 'xrt' && xlaProfile && f.whole && !setsPjrt) {
            fix = { title: 'Set `PJRT_DEVICE=TPU` instead', applicability: 'unsafe' as const, edits: [replaceRange(f.nameAt, f.tokenEnd, 'PJRT_DEVICE=TPU')] };
          } else if (verdict.action === 'xrt' && setsPjrt) {
            fix = { title: `Remove \`${f.name}\``, applicability: 'unsafe' as const, edits: [{ ...del, text: '' }] };
          } else if (verdict.action === 'delete' && (f.name === 'GPU_NUM_DEVICES' || tpuOnly)) {
            fix = { title: `Remove \`${f.name}\``, applicability: 'safe' as const, edits: [{ ...del, text: '' }] };
          }
        }
        ctx.report({ start: f.nameAt, end: f.valueEnd >= 0 ? Math.max(f.valueEnd, f.nameAt + f.name.length) : f.nameAt + f.name.length }, { severity: verdict.severity, message: verdict.message, fix });
      }
    }

    function at(name: string, value: string, nameAt: number, valueStart: number, whole: boolean, prefix: boolean): Found {
      const valueEnd = valueStart >= 0 ? valueStart + value.length : -1;
      const closing = valueEnd >= 0 && /["']/.test(ctx.text[valueEnd] ?? '') && /["']/.test(ctx.text[valueStart - 1] ?? '') ? 1 : 0;
      return { name, value, nameAt, valueStart, valueEnd, tokenEnd: valueEnd + closing, whole, prefix };
    }
    function push(list: Found[], m: RegExpMatchArray, base: number, whole: boolean, prefix: boolean) {
      const name = m[2];
      const raw = m[3];
      const quoted = /^["']/.test(raw);
      const value = quoted ? raw.slice(1, -1) : raw;
      const full = m[0];
      const nameAt = base + m.index! + full.indexOf(name, m[1].length);
      const valueStart = nameAt + name.length + 1 + (quoted ? 1 : 0);
      if (list.some((x) => x.nameAt === nameAt)) return;
      list.push(at(name, value, nameAt, valueStart, whole, prefix));
    }
  },
});

interface Found {
  name: string;
  value: string;
  nameAt: number;
  valueStart: number;
  valueEnd: number;
  /** After the closing quote. */
  tokenEnd: number;
  /** The line holds only this assignment (deleting the line is safe). */
  whole: boolean;
  /** `NAME=value cmd …`: the assignment prefixes a command. */
  prefix: boolean;
}

function stripComment(text: string, kind: TextContext['fileKind']): string {
  if (/^\s*#/.test(text)) return '';
  // ` # comment` after code (shell, YAML, .env); not inside quotes in the simple cases we parse
  const i = text.search(/\s#/);
  return i >= 0 && kind !== 'dockerfile' ? text.slice(0, i) : text;
}

/** `NAME=value ` at the start of a command line: the token and the blanks after it. */
function prefixRange(text: string, nameAt: number): { start: number; end: number } {
  let end = nameAt;
  let quote: string | null = null;
  while (end < text.length) {
    const ch = text[end];
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') break;
    end++;
  }
  while (text[end] === ' ' || text[end] === '\t') end++;
  return { start: nameAt, end };
}

function deletion(text: string, w: ReturnType<typeof envWrites>[number], applicability: 'safe' | 'unsafe') {
  if (w.magic && w.lineRange) return { title: `Remove \`${w.name}\``, applicability, edits: [{ ...w.lineRange, text: '' }] };
  if (w.stmt) return { title: `Remove \`${w.name}\``, applicability, edits: [deleteStatement(text, w.stmt)] };
  return null;
}

function prevStatement(stmt: Node): Node | null {
  let p = stmt.previousNamedSibling;
  while (p && p.type === 'comment') p = p.previousNamedSibling;
  return p;
}
