import { defineRule, type ReportOptions, type RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';
import type { Idioms } from '../../core/idioms';
import { textLines, wholeLine } from './runtime-util';

/** One requirement found in a dependency file or an install command. */
interface Req {
  /** Normalized: lower case, `_`/`.` → `-`. */
  name: string;
  extras: string;
  /** Offsets of the name, the extras (incl. brackets, may be empty) and the version spec. */
  nameStart: number;
  nameEnd: number;
  extrasEnd: number;
  specStart: number;
  specEnd: number;
  /** The exact version of `==`/`~=`/`=` (conda) pins, without a local `+cu121` part. */
  version: string | null;
  /** Offsets of the pinned version text (without the local part). */
  versionStart: number;
  versionEnd: number;
  /** `+cu121`-style local version: its offsets. */
  local: { start: number; end: number; text: string } | null;
  /** Range deleting the whole entry (its own line), or null when it shares the line. */
  line: { start: number; end: number } | null;
}

const REQ = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(\(?\s*(?:[<>=!~]=?|===?)[^;#]*?\)?)?\s*(;.*)?$/;

function norm(name: string): string {
  return name.toLowerCase().replace(/[_.]+/g, '-');
}

/** Parses `text` (a requirement string) that starts at `base`. */
function parseReq(text: string, base: number, line: { start: number; end: number } | null): Req | null {
  const m = REQ.exec(text);
  if (!m) return null;
  const nameStart = base;
  const nameEnd = base + m[1].length;
  const extrasEnd = m[2] ? base + text.indexOf(m[2], m[1].length) + m[2].length : nameEnd;
  const specRaw = m[3] ?? '';
  const specStart = specRaw ? base + text.indexOf(specRaw, extrasEnd - base) : extrasEnd;
  const specEnd = specStart + specRaw.length;
  let version: string | null = null;
  let versionStart = -1;
  let versionEnd = -1;
  let local: Req['local'] = null;
  const pin = /(==|~=|(?<![<>!=~])=)\s*([0-9][0-9A-Za-z.*]*)(\+[0-9A-Za-z.]+)?/.exec(specRaw);
  if (pin && !/[<>]/.test(specRaw.slice(0, pin.index))) {
    version = pin[2];
    versionStart = specStart + pin.index + pin[0].indexOf(pin[2], pin[1].length);
    versionEnd = versionStart + pin[2].length;
    if (pin[3]) local = { start: versionEnd, end: versionEnd + pin[3].length, text: pin[3] };
  }
  return { name: norm(m[1]), extras: m[2] ?? '', nameStart, nameEnd, extrasEnd, specStart, specEnd, version, versionStart, versionEnd, local, line };
}

function majorMinor(v: string | null): string | null {
  const m = v ? /^(\d+)\.(\d+)/.exec(v) : null;
  return m ? `${m[1]}.${m[2]}` : null;
}

/** Requirements named by `pip install …` arguments (Dockerfile RUN lines, notebook magics). */
function pipArgs(text: string, base: number): { reqs: Req[]; urls: string[] } {
  const reqs: Req[] = [];
  const urls: string[] = [];
  const cmd = /\bpip3?\s+install\b|\bpython3?\s+-m\s+pip\s+install\b|\buv\s+pip\s+install\b/g;
  for (let m = cmd.exec(text); m; m = cmd.exec(text)) {
    let i = m.index + m[0].length;
    let expectValue = false;
    for (;;) {
      while (i < text.length && /[ \t\\\r\n]/.test(text[i])) i++;
      if (i >= text.length || /[;&|#)]/.test(text[i])) break;
      let j = i;
      let quote: string | null = null;
      if (text[i] === '"' || text[i] === "'") {
        quote = text[i];
        j = text.indexOf(quote, i + 1);
        if (j === -1) j = text.length;
      } else while (j < text.length && !/[ \t\r\n;&|)]/.test(text[j])) j++;
      const tokStart = quote ? i + 1 : i;
      const tok = text.slice(tokStart, j);
      if (expectValue) {
        urls.push(tok);
        expectValue = false;
      } else if (tok.startsWith('-')) {
        if (/^(-i|--index-url|--extra-index-url|-f|--find-links|-r|--requirement|-c|--constraint)$/.test(tok)) expectValue = true;
        else if (/^(--index-url|--extra-index-url|--find-links)=/.test(tok)) urls.push(tok.split('=').slice(1).join('='));
      } else {
        const r = parseReq(tok, base + tokStart, null);
        if (r) reqs.push(r);
      }
      i = quote ? j + 1 : j;
    }
  }
  return { reqs, urls };
}

const CUDA_ONLY = /^(nvidia-[a-z0-9-]+-cu\d+|cupy(-cuda\d+x?)?|pycuda|pytorch-cuda|cudatoolkit|cuda-toolkit)$/;

interface Scan {
  reqs: Req[];
  urls: { url: string; at: { start: number; end: number } }[];
  /** The whole file mentions torch_xla / libtpu some other way (base image, find-links). */
  text: string;
}

function analyse(scan: Scan, idiom: Idioms, opts: { fixes: boolean; notebook: boolean; fileName: string }, report: (at: { start: number; end: number }, o: ReportOptions) => void): void {
  const { reqs } = scan;
  const torch = reqs.find((r) => r.name === 'torch' || r.name === 'pytorch');
  const xla = reqs.find((r) => r.name === 'torch-xla');
  const tpuOnly = !idiom.dualPath && idiom.profile === 'torch_xla';
  const xlaProfile = idiom.profile === 'torch_xla';
  const gpuFile = /gpu|cuda|cu1\d\d/i.test(opts.fileName);
  const libtpu = reqs.some((r) => /^libtpu/.test(r.name)) || /libtpu/i.test(scan.text.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '')).join('\n'));
  const at = (r: Req) => ({ start: r.nameStart, end: Math.max(r.specEnd, r.extrasEnd) });

  if (gpuFile) return; // a GPU-only dependency set by name (requirements-gpu.txt): not a TPU target
  const code = scan.text.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '')).join('\n');
  if (torch && !xla && !/torch[_-]xla|pytorch\/xla|tpu-pytorch/i.test(code)) {
    const mm = majorMinor(torch.version);
    const lineStart = scan.text.lastIndexOf('\n', torch.nameStart - 1) + 1;
    const prefix = scan.text.slice(lineStart, torch.nameStart);
    const line = mm && /^2\./.test(mm) && torch.line && opts.fixes && tpuOnly && /^[ \t]*(-[ \t]+)?$/.test(prefix) ? torch.line : null;
    report(at(torch), {
      severity: 'error',
      message: (xlaProfile
        ? `\`${scan.text.slice(torch.nameStart, torch.nameEnd)}\` is installed without \`torch_xla[tpu]\`: nothing here can run on a TPU`
        : `\`${scan.text.slice(torch.nameStart, torch.nameEnd)}\` is installed without a TPU runtime package`) +
        // `torch==1.13.1` (DeiT/MAE-era pins): every torch_xla target of the catalog is 2.x, paired with the same torch X.Y
        (mm && /^[01]\./.test(mm) ? (xlaProfile ? `, and torch ${mm} pairs with no torch_xla release this tool targets (2.x, each paired with the same torch X.Y)` : `, and torch ${mm} is older than the torch 2.x the TPU runtime needs`) : ''),
      fix: line
        ? { title: `Add \`torch_xla[tpu]~=${mm}.0\``, applicability: 'unsafe', edits: [{ start: line.end - lineBreakLen(scan.text, line.end), end: line.end - lineBreakLen(scan.text, line.end), text: `${eolOf(scan.text)}${prefix}torch_xla[tpu]~=${mm}.0` }] }
        : null,
    });
  }
  if (xla) {
    if (!/\btpu\b/i.test(xla.extras) && !libtpu) {
      report(at(xla), {
        severity: 'warning',
        message: '`torch_xla` without the `[tpu]` extra (or `libtpu`) has no TPU runtime and falls back to the CPU',
        fix: opts.fixes && xlaProfile ? { title: 'Use `torch_xla[tpu]`', applicability: 'unsafe', edits: [{ start: xla.nameEnd, end: xla.extrasEnd, text: '[tpu]' }] } : null,
      });
    }
    const a = majorMinor(torch?.version ?? null);
    const b = majorMinor(xla.version);
    if (torch && a && b && a !== b) {
      report({ start: xla.specStart, end: xla.specEnd }, {
        severity: 'error',
        message: `torch ${a} and torch_xla ${b} do not match: PyTorch and PyTorch/XLA versions must be the same X.Y`,
        fix: opts.fixes && torch.versionStart >= 0 && xla.version
          ? { title: `Pin torch to ${xla.version}`, applicability: 'unsafe', edits: [{ start: torch.versionStart, end: torch.versionEnd, text: xla.version }] }
          : null,
      });
    }
  }
  if (opts.notebook) {
    // version pairs and CUDA wheels in notebook installs are TPU903's
    for (const r of reqs) if ((r.name === 'tensorflow' || r.name === 'tensorflow-gpu') && xlaProfile) reportTf(r);
    return;
  }
  for (const r of reqs) {
    if ((r.name === 'torch' || r.name === 'torchvision' || r.name === 'torchaudio') && r.local && /^\+cu\d+/.test(r.local.text)) {
      report({ start: r.local.start, end: r.local.end }, {
        severity: 'warning',
        message: `\`${r.local.text}\` is a CUDA build: a TPU host needs ${xlaProfile ? 'the standard (CPU) wheel of torch that matches torch_xla' : 'a non-CUDA wheel of torch (which build TorchTPU pairs with is not documented yet)'}`,
        fix: opts.fixes && tpuOnly ? { title: `Drop \`${r.local.text}\``, applicability: 'unsafe', edits: [{ start: r.local.start, end: r.local.end, text: '' }] } : null,
      });
    } else if (CUDA_ONLY.test(r.name)) {
      report(at(r), {
        severity: 'warning',
        message: `\`${scan.text.slice(r.nameStart, r.nameEnd)}\` is a CUDA-only package; it cannot be used on a TPU host`,
        fix: opts.fixes && tpuOnly && r.line ? { title: `Remove \`${scan.text.slice(r.nameStart, r.nameEnd)}\``, applicability: 'unsafe', edits: [{ ...r.line, text: '' }] } : null,
      });
    } else if ((r.name === 'tensorflow' || r.name === 'tensorflow-gpu') && xlaProfile) reportTf(r); // the conflict is torch_xla's (its import warns)
    else if (r.name === 'timm' && r.version && oldTimm(r.version)) {
      // timm 0.3.2 (the pin of DeiT/MAE-era repos): timm/models/layers/helpers.py:6 `from torch._six import container_abcs`
      // (huggingface/pytorch-image-models@6504a428); the import became `collections.abc` in 94ca140b (timm 0.4.2 dev).
      // No fix: code written for 0.3.x may need more than a version bump
      report(at(r), {
        severity: 'error',
        message: `\`timm==${r.version}\` imports \`torch._six\` (\`from torch._six import container_abcs\`), which torch 2.x no longer has, and ${xlaProfile ? 'every torch_xla release this tool targets pairs' : 'the TPU runtime this tool targets runs'} with torch 2.x: \`import timm\` fails`,
      });
    }
  }
  for (const u of scan.urls) {
    if (/download\.pytorch\.org\/whl\/(nightly\/)?cu\d+/.test(u.url)) {
      report(u.at, { severity: 'warning', message: xlaProfile ? 'this index serves CUDA builds of torch; torch_xla wheels pair with the standard torch wheel of the same version' : 'this index serves CUDA builds of torch; which torch build TorchTPU pairs with is not documented yet' });
    }
  }

  function reportTf(r: Req) {
    report(at(r), {
      severity: 'warning',
      message: '`tensorflow` can conflict with torch_xla (`import torch_xla` warns about it); prefer `tensorflow-cpu`',
      fix: opts.fixes && tpuOnly && !opts.notebook ? { title: 'Use `tensorflow-cpu`', applicability: 'unsafe', edits: [{ start: r.nameStart, end: r.extrasEnd, text: 'tensorflow-cpu' }] } : null,
    });
  }
}

/**
 * A timm release before 0.4.2: the `collections.abc` import (94ca140b) landed while timm/version.py said 0.4.2, and the
 * version bumps to 0.2.0-0.4.1 all still import `torch._six` (checked at each bump commit of timm/version.py).
 */
function oldTimm(version: string): boolean {
  const [a, b, c] = version.split('.').map((x) => parseInt(x, 10));
  return a === 0 && (b < 4 || (b === 4 && (c || 0) < 2));
}

function eolOf(text: string): string {
  const i = text.indexOf('\n');
  return i > 0 && text[i - 1] === '\r' ? '\r\n' : '\n';
}

/** Length of the line break just before `end` of a whole-line range (0 on the last line). */
function lineBreakLen(text: string, end: number): number {
  if (text[end - 1] !== '\n') return 0;
  return text[end - 2] === '\r' ? 2 : 1;
}

export default defineRule({
  id: 'TPU110',
  name: 'tpu-runtime-requirements',
  title: 'Install and requirements for the TPU runtime',
  severity: 'error',
  step: 2,
  effort: 1,
  message: 'The dependencies do not install a working TPU runtime',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Fix the TPU runtime requirement' },
  triggers: ['pip', 'torch', 'tensorflow'],
  textKinds: ['requirements', 'pyproject', 'setup-cfg', 'conda', 'dockerfile'],
  docs: {
    what:
      'Checks requirements*.txt, pyproject.toml, setup.cfg, conda environment files, Dockerfile `pip install` lines and notebook `%pip`/`!pip install` magics for: torch without `torch_xla` (error); ' +
      '`torch_xla` without the `[tpu]` extra or `libtpu` (warning: it then runs on the CPU); torch and torch_xla with different X.Y (error); CUDA builds and CUDA-only packages ' +
      '(`+cu121` wheels, `download.pytorch.org/whl/cuXXX` indexes, `nvidia-*-cu12`, `cupy`, `pycuda`, `pytorch-cuda`, `cudatoolkit`) and `tensorflow` instead of `tensorflow-cpu` (warnings). ' +
      'Also code and pins that need torch 1.x: `from torch._six import ...`, `import torch._six` and `torch._six.*` reads in Python (error, outside a `try:` ' +
      'that catches the ImportError or a torch-version test), and `timm` pins before 0.4.2 (error), whose `timm/models/layers/helpers.py` imports `torch._six`. ' +
      'Findings are anchored on the requirement. Files named for GPUs (`requirements-gpu.txt`, `…cuda…`) are skipped. In notebooks the version pairing and CUDA wheels are left to TPU903.',
    why:
      '"PyTorch and PyTorch/XLA version should match" (TS:14-16); the README installs `torch==2.8.0 \'torch_xla[tpu]==2.8.0\'` (README.md:40), the `[tpu]` extra bringing libtpu. ' +
      '`import torch_xla` warns: "`tensorflow` can conflict with `torch-xla`. Prefer `tensorflow-cpu` when using PyTorch/XLA" (INIT:240-253). CUDA-only packages cannot be used on a TPU VM. ' +
      'Supported Python versions of the wheels are not checked: the README states two different ranges (unverified which is current). ' +
      '`torch._six` was removed in torch 2.0 (pytorch/pytorch#94709; `ModuleNotFoundError: No module named \'torch._six\'` on torch 2.0.1, pytorch/pytorch#102410), ' +
      'and every torch_xla release the catalog targets pairs with torch 2.x; timm 0.3.2 does `from torch._six import container_abcs` (timm/models/layers/helpers.py:6 at ' +
      'huggingface/pytorch-image-models@6504a428), changed to `collections.abc` in 94ca140b while the version said 0.4.2.',
    example: 'torch==2.1.0+cu121\ncupy-cuda12x\ntensorflow==2.15',
    useInstead: 'torch==2.8.0\ntorch_xla[tpu]==2.8.0        # same X.Y as torch\ntensorflow-cpu                # only if TF is needed',
    fixSafety:
      'Unsafe: every fix edits dependency pins. Adding `torch_xla[tpu]~=X.Y.0` (requirements files, pinned torch), dropping `+cuXXX`, removing CUDA-only packages and switching to `tensorflow-cpu` ' +
      'are offered in the torch_xla tpu-only style only: in dual-path style the same file must still install for CUDA (keep a separate TPU requirements file). ' +
      'Adding `[tpu]` and aligning torch to the torch_xla pin are offered in both styles. ' +
      'Safe: a `from torch._six import ...` whose every name has an exact standard-library twin is rewritten to it, one statement per name, with the values torch 1.13 ' +
      'defined (`inf`/`nan` from `math`, `string_classes = (str, bytes)`; torch 1.8\'s `container_abcs` is `collections.abc`, `int_classes` is `int`); ' +
      'no fix for `with_metaclass`, `import torch._six` or the timm pin (code written for timm 0.3 may need more than a version bump).',
    sources: [
      'TS: docs/source/learn/troubleshoot.md:14-16 (versions must match); README.md:40 (install line)',
      'pytorch/xla torch_xla/__init__.py (INIT:240-253): tensorflow conflict warning, checked in the stored source',
      'catalog TPU110',
    ],
    torchtpu: 'The preview profile reports the same problems; the TorchTPU package name is not public yet, so no install line is suggested.',
  },
  check(ctx) {
    reportTorchSix(ctx);
    if (!ctx.notebook) return;
    const reqs: Req[] = [];
    const urls: Scan['urls'] = [];
    for (const m of ctx.notebook.magics) {
      const raw = m.text;
      if (!/pip3?\s+install/.test(raw)) continue;
      const r = pipArgs(raw, m.start);
      reqs.push(...r.reqs);
      for (const u of r.urls) urls.push({ url: u, at: { start: m.start, end: m.end } });
    }
    if (!reqs.length) return;
    const magicText = ctx.notebook.magics.map((m) => m.text).join('\n');
    // offsets index the combined program; names are read back from the magic text, so splice it into a same-length copy
    let text = ctx.text;
    for (const m of ctx.notebook.magics) text = text.slice(0, m.start) + m.text + text.slice(m.end);
    const importsXla = ctx.sema.xlaAware;
    analyse({ reqs, urls, text: importsXla ? text + '\ntorch_xla' : text + '\n' + magicText }, ctx.idiom, { fixes: false, notebook: true, fileName: ctx.path }, (at, o) => ctx.report(at, o));
  },
  checkText(ctx) {
    const kind = ctx.fileKind;
    const reqs: Req[] = [];
    const urls: Scan['urls'] = [];
    const lines = textLines(ctx.text);
    if (kind === 'dockerfile') {
      // RUN lines joined across `\` continuations
      for (let i = 0; i < lines.length; i++) {
        if (!/^\s*RUN\b/i.test(lines[i].text)) continue;
        let j = i;
        // Docker drops comment lines inside a continued instruction
        while (j < lines.length - 1 && (/\\\s*$/.test(lines[j].text) || /^\s*#/.test(lines[j].text))) j++;
        const start = lines[i].start;
        const body = lines
          .slice(i, j + 1)
          .map((l) => (/^\s*#/.test(l.text) ? ' '.repeat(l.text.length) : l.text))
          .reduce((acc, l, k) => acc + l + (k < j - i ? ctx.text.slice(lines[i + k].end, lines[i + k + 1].start) : ''), '');
        const r = pipArgs(body, start);
        reqs.push(...r.reqs);
        for (const u of r.urls) {
          const k = ctx.text.indexOf(u, start);
          urls.push({ url: u, at: { start: k, end: k + u.length } });
        }
        i = j;
      }
    } else if (kind === 'pyproject') {
      for (const m of ctx.text.matchAll(/(["'])([A-Za-z0-9][^"'\n]*)\1/g)) {
        const r = parseReq(m[2], m.index! + 1, null);
        if (r && isInteresting(r.name)) reqs.push(r);
      }
      for (const l of lines) {
        const p = /^(\s*)([A-Za-z0-9][\w.-]*)\s*=\s*(?:"([^"]*)"|\{[^}]*version\s*=\s*"([^"]*)")/.exec(l.text);
        if (!p || !isInteresting(norm(p[2]))) continue;
        const spec = p[3] ?? p[4] ?? '';
        const vm = /(\d+\.\d+[\w.]*)/.exec(spec);
        const nameStart = l.start + p[1].length;
        const specAt = l.start + l.text.indexOf(spec, p[1].length + p[2].length);
        reqs.push({
          name: norm(p[2]), extras: '', nameStart, nameEnd: nameStart + p[2].length, extrasEnd: nameStart + p[2].length, specStart: specAt, specEnd: specAt + spec.length,
          version: vm ? vm[1] : null, versionStart: vm ? specAt + vm.index : -1, versionEnd: vm ? specAt + vm.index + vm[1].length : -1, local: null, line: null,
        });
      }
    } else {
      for (const l of lines) {
        let body = l.text.replace(/\s+#.*$/, '');
        if (/^\s*#/.test(body) || !body.trim()) continue;
        let offset = 0;
        if (kind === 'requirements') {
          const opt = /^\s*(-i|--index-url|--extra-index-url|-f|--find-links)[\s=]+(\S+)/.exec(body);
          if (opt) {
            urls.push({ url: opt[2], at: { start: l.start + body.indexOf(opt[2]), end: l.start + body.indexOf(opt[2]) + opt[2].length } });
            continue;
          }
          if (/^\s*-/.test(body)) continue;
        } else if (kind === 'conda') {
          const item = /^(\s*-\s+)(.*)$/.exec(body);
          if (!item || /^pip\s*:?$/.test(item[2].trim())) continue;
          offset = item[1].length;
          body = item[2];
        } else if (kind === 'setup-cfg') {
          const kv = /^(\s*(?:install_requires|[\w-]+)\s*=\s*)(.+)$/.exec(body);
          if (kv && /^\s*install_requires/.test(kv[1])) {
            offset = kv[1].length;
            body = kv[2];
          } else if (!/^\s+\S/.test(body)) continue;
        }
        const lead = /^\s*/.exec(body)![0].length;
        const r = parseReq(body.trim(), l.start + offset + lead, wholeLine(ctx.text, l.start, l.end));
        if (r && (kind !== 'setup-cfg' || isInteresting(r.name))) reqs.push(r);
      }
    }
    const fileName = ctx.path.split(/[\\/]/).pop()!.replace(/^TPU\d{3}__/, '');
    analyse({ reqs, urls, text: ctx.text }, ctx.idiom, { fixes: true, notebook: false, fileName }, (at, o) => ctx.report(at, o));
  },
});

function isInteresting(name: string): boolean {
  return /^(torch|pytorch|torch-xla|torchvision|torchaudio|libtpu.*|tensorflow(-gpu)?|pycuda|pytorch-cuda|cudatoolkit|cuda-toolkit|cupy.*|nvidia-.*-cu\d+)$/.test(name);
}


/**
 * What each name of torch 1.x's `torch/_six.py` was, as a statement binding `alias` (torch 1.13: `inf = math.inf`,
 * `nan = math.nan`, `string_classes = (str, bytes)`; torch 1.8: `container_abcs = collections.abc`, `int_classes = int`).
 * `with_metaclass` and the rest have no one-line standard-library twin.
 */
const SIX_NAMES: Record<string, (alias: string) => string> = {
  inf: (a) => (a === 'inf' ? 'from math import inf' : `from math import inf as ${a}`),
  nan: (a) => (a === 'nan' ? 'from math import nan' : `from math import nan as ${a}`),
  string_classes: (a) => `${a} = (str, bytes)`,
  container_abcs: (a) => `import collections.abc as ${a}`,
  int_classes: (a) => `${a} = int`,
};

/**
 * `from torch._six import inf` / `import torch._six` / `torch._six.string_classes`: torch._six was removed in torch 2.0
 * (pytorch/pytorch#94709), and every torch_xla release this catalog targets (and the TorchTPU preview) needs torch 2.x, so
 * the import raises ModuleNotFoundError. Not inside a `try:` that catches the failure (a compatibility shim) or under a
 * torch-version test.
 */
function reportTorchSix(ctx: RuleContext): void {
  const sema = ctx.sema;
  const shimmed = (n: Node): boolean => {
    for (let p = n.parent; p; p = p.parent) {
      if (p.type === 'try_statement' && p.namedChildren.some((c) => c?.type === 'except_clause')) return true;
      if ((p.type === 'if_statement' || p.type === 'elif_clause') && /version|TORCH_\w*\d|_six/i.test(p.childForFieldName('condition')?.text ?? '')) return true;
      if (p.type === 'function_definition' || p.type === 'class_definition') break;
    }
    return false;
  };
  const why = 'torch._six was removed in torch 2.0, and every TPU runtime this tool targets pairs with torch 2.x: this raises ModuleNotFoundError';
  let imported = false;
  for (const imp of sema.nodes('import_from_statement')) {
    if (imp.childForFieldName('module_name')?.text !== 'torch._six') continue;
    imported = true;
    if (shimmed(imp)) continue;
    const lines: string[] = [];
    for (const c of imp.childrenForFieldName('name')) {
      const name = c?.type === 'aliased_import' ? c.childForFieldName('name')?.text : c?.text;
      const alias = c?.type === 'aliased_import' ? c.childForFieldName('alias')?.text : name;
      const rep = name ? SIX_NAMES[name] : undefined;
      if (!rep || !alias) {
        lines.length = 0;
        break;
      }
      lines.push(rep(alias));
    }
    const lineStart = ctx.text.lastIndexOf('\n', imp.startIndex - 1) + 1;
    const indent = /^[ \t]*/.exec(ctx.text.slice(lineStart, imp.startIndex))?.[0] ?? '';
    // one statement per line, at the import's indentation (only when the import is the first thing on its line)
    const own = ctx.text.slice(lineStart, imp.startIndex).trim() === '';
    ctx.report(imp, {
      message: `\`${imp.text.length > 60 ? `${imp.text.slice(0, 57)}...` : imp.text}\`: ${why}`,
      fix: lines.length && own
        ? { title: `Use the standard library (${lines.join('; ')})`, applicability: 'safe', edits: [{ start: imp.startIndex, end: imp.endIndex, text: lines.join(`\n${indent}`) }] }
        : null,
    });
  }
  for (const imp of sema.nodes('import_statement')) {
    const names = imp.childrenForFieldName('name').map((c) => (c?.type === 'aliased_import' ? c.childForFieldName('name') : c)?.text ?? '');
    if (!names.some((n) => n === 'torch._six' || n.startsWith('torch._six.'))) continue;
    imported = true;
    if (!shimmed(imp)) ctx.report(imp, { message: `\`${imp.text}\`: ${why}`, fix: null });
  }
  if (imported) return;
  // `import torch` … `isinstance(x, torch._six.string_classes)` (torch 1.x imported _six itself)
  for (const a of sema.nodes('attribute')) {
    if (a.parent?.type === 'attribute' || !/^torch\._six\./.test(sema.resolve(a) ?? '') || shimmed(a)) continue;
    ctx.report(a, { message: `\`${a.text}\`: ${why}`, fix: null });
  }
}
