import { defineRule, type FixDraft } from '../../core/rule';
import { replaceRange } from '../../core/edits';
import { pipLines, tokens } from './util';

interface Req {
  name: string;
  version: string | null;
  raw: string;
  start: number;
  end: number;
  line: number;
}

function parseReq(value: string): { name: string; version: string | null } | null {
  if (value.startsWith('-') || /^(https?:|git\+|\.|\/)/.test(value)) return null;
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$/.exec(value);
  if (!m) return null;
  const pin = /^==\s*([0-9][0-9a-z.*+]*)/i.exec(m[3]);
  return { name: m[1].toLowerCase().replace(/_/g, '-'), version: pin ? pin[1] : null };
}

const minor = (v: string | null) => (v ? /^(\d+\.\d+)/.exec(v)?.[1] ?? null : null);
const RESTART = /os\.kill\(\s*os\.getpid\(\)|do_shutdown\(|exit\(\)|Restart/;

export default defineRule({
  id: 'TPU903',
  name: 'notebook-install-pitfalls',
  title: 'Notebook package installs: version mismatch, CUDA wheels, TensorFlow, missing restart',
  severity: 'warning',
  step: 2,
  effort: 1,
  message: 'This notebook install can leave torch and torch_xla mismatched',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Pin torch to the torch_xla version' },
  triggers: ['pip', 'conda', 'mamba'],
  notebookOnly: true,
  docs: {
    what:
      'Checks `!pip` / `%pip` install lines in notebooks for: `torch_xla` without `torch` pinned to the same major.minor; CUDA wheels (`+cuXXX` versions, ' +
      '`download.pytorch.org/whl/cu…` indexes, `nvidia-*`, `cupy-cuda*`, `jax[cuda…]`); installing `torch` after a cell already imported it; installing full `tensorflow`.',
    why:
      'torch_xla wheels are built against one torch release; the troubleshooting guide requires matching torch and torch_xla versions (TS). CUDA wheels bring ' +
      'gigabytes of NVIDIA libraries a TPU VM cannot use. A package upgraded after `import torch` is not reloaded by the running kernel. torch_xla warns when ' +
      '`tensorflow` is installed and says: "If you are in a notebook environment such as Colab or Kaggle, restart your notebook runtime afterwards" (INIT:240-253); ' +
      'a preinstalled TensorFlow on Colab or Kaggle images is not visible to this check.',
    example: "!pip install torch_xla[tpu]==2.9.0\n!pip install torch --index-url https://download.pytorch.org/whl/cu121",
    useInstead: "%pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'\n%pip uninstall -y tensorflow\n%pip install tensorflow-cpu\n# then restart the runtime",
    fixSafety: 'Unsafe: pins `torch` to the torch_xla version on the same install line, which can downgrade or upgrade torch. Restart the runtime after installing.',
    sources: ['TS (docs/source/learn/troubleshoot.md: matching torch and torch_xla versions)', 'INIT:240-253 (torch_xla/__init__.py tensorflow warning)', 'README.md:40 (install line)'],
    torchtpu: 'For the preview, install the matching torch and torch_tpu builds together; the same version and restart advice applies.',
  },
  check(ctx) {
    const lines = pipLines(ctx);
    if (!lines.length) return;
    const reqs: Req[] = [];
    lines.forEach((l, i) => {
      if (l.verb !== 'install') return;
      for (const t of tokens(l.args, l.argsOffset)) {
        const r = parseReq(t.value);
        if (r) reqs.push({ ...r, raw: t.raw, start: t.start, end: t.end, line: i });
        else if (/download\.pytorch\.org\/whl\/cu\d+/.test(t.value)) {
          ctx.report(t, { message: 'This install uses the CUDA wheel index: a TPU VM needs the CPU/TPU torch wheels' });
        }
      }
    });
    const torchImports = [...ctx.sema.nodes('import_statement'), ...ctx.sema.nodes('import_from_statement')]
      .filter((n) => /^(import|from)\s+torch\b/.test(n.text))
      .map((n) => n.startIndex);
    const usesXla = ctx.sema.imports('torch_xla') || reqs.some((r) => r.name === 'torch-xla');
    for (const r of reqs) {
      const at = { start: r.start, end: r.end };
      if (/\+cu\d+/.test(r.raw) || /^nvidia-/.test(r.name) || /^cupy-cuda/.test(r.name) || (r.name === 'jax' && /\[cuda/.test(r.raw))) {
        ctx.report(at, { message: `\`${r.raw}\` is a CUDA build: a TPU VM cannot use it` });
        continue;
      }
      if (r.name === 'torch-xla') {
        const xv = minor(r.version);
        // torch pinned in the same cell counts (the same line, or a neighbouring install line)
        const cellOf = (o: number) => ctx.notebook?.spans.find((sp) => sp.start <= o && o <= sp.end)?.cell;
        const torchReqs = reqs.filter((t) => t.name === 'torch' && cellOf(t.start) === cellOf(r.start));
        if (xv && torchReqs.some((t) => minor(t.version) === xv)) continue;
        let fix: FixDraft | null = null;
        if (r.version) {
          const pin = /\*/.test(r.version) ? `'torch==${r.version}'` : `torch==${r.version}`;
          const same = torchReqs.find((t) => t.line === r.line);
          if (same) fix = { edits: [replaceRange(same.start, same.end, pin)], title: `Pin \`${pin}\`` };
          else if (!torchReqs.length) fix = { edits: [replaceRange(r.start, r.start, `${pin} `)], title: `Pin \`${pin}\`` };
        }
        ctx.report(at, {
          message: xv
            ? `\`${r.raw}\` is installed without \`torch==${xv}.*\`: torch and torch_xla must share the same version`
            : `\`${r.raw}\` is unpinned: pin torch and torch_xla to the same version (e.g. \`torch==X.Y.Z 'torch_xla[tpu]==X.Y.Z'\`)`,
          fix,
        });
        continue;
      }
      if (r.name === 'torch' && torchImports.some((s) => s < r.start)) {
        const cellEnd = ctx.notebook?.spans.find((s) => s.start <= r.start && r.start <= s.end)?.end ?? r.end;
        if (RESTART.test(ctx.text.slice(r.end, cellEnd))) continue;
        ctx.report(at, { message: '`torch` is installed after it was imported: restart the runtime, or the kernel keeps running the old version' });
        continue;
      }
      if (r.name === 'tensorflow' && usesXla) {
        // the conflict is with torch_xla's runtime; one with torch_tpu is not public
        if (ctx.idiom.profile !== 'torchtpu') ctx.report(at, { message: 'Full `tensorflow` conflicts with torch_xla\'s TPU runtime: install `tensorflow-cpu` instead, then restart' });
      }
    }
  },
});
