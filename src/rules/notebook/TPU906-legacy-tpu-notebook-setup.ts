import { defineRule, type FixDraft } from '../../core/rule';
import type { Node } from '../../core/parse';
import { stringContent } from '../../core/semantics';
import { replaceRange } from '../../core/edits';
import { deleteLineInCell, deleteStatementInCell, envWrites, pipLines, plainString, tokens } from './util';

const LEGACY_VARS = new Set(['XRT_TPU_CONFIG', 'COLAB_TPU_ADDR']);
const WHEELS = /storage\.googleapis\.com\/tpu-pytorch\/wheels/;

export default defineRule({
  id: 'TPU906',
  name: 'legacy-tpu-notebook-setup',
  title: 'Legacy TPU-notebook setup (XRT / TPU Node / old Colab)',
  severity: 'error',
  step: 2,
  effort: 1,
  message: 'Legacy XRT / TPU Node notebook setup: current torch_xla runs on PJRT only',
  fix: { availability: 'sometimes', applicability: 'unsafe', title: 'Replace the legacy setup with a current install' },
  triggers: ['env-setup', 'XRT_', 'COLAB_TPU_ADDR', 'TPU_NAME', 'cloud-tpu-client', 'tpu-pytorch', 'TPU_LEGACY'],
  profiles: ['torch_xla'],
  notebookOnly: true,
  docs: {
    what:
      'Checks notebooks for the old TPU setup: `env-setup.py` / `pytorch-xla-env-setup.py` downloads and runs, wheels from `storage.googleapis.com/tpu-pytorch/wheels/…`, ' +
      'commented-out install hints of those (`# !pip install cloud-tpu-client==0.10 torch==1.9.0 …torch_xla-1.9…whl`, info; the fix rewrites the hint, still commented), ' +
      '`cloud-tpu-client` installs, `XRT_TPU_CONFIG`, `COLAB_TPU_ADDR`, `TPU_NAME` pointing at a `grpc://` TPU Node and `PJRT_DEVICE=TPU_LEGACY`. ' +
      'Removals of `TPU_PROCESS_ADDRESSES` (the Kaggle PT/XLA 2.1 sample) are not reported: torch_xla sets that variable with `os.environ.setdefault` ' +
      '(torch_xla/_internal/tpu.py:268 at v2.3.0, :296 at v2.9.0), so a stale value from the image would win over it.',
    why:
      'XRT, the runtime those settings configure, was removed from the main torch_xla build in 2.1 (commit f6409de); PJRT has been the default since 2.0 and is the ' +
      'only runtime now (PJRT:26-31). The TPU Node architecture (a remote TPU behind a gRPC address) is what `COLAB_TPU_ADDR` and `grpc://` `TPU_NAME` point at. ' +
      'Whether a given Colab or Kaggle image still needs specific environment removals is unverified.',
    example:
      "!curl https://raw.githubusercontent.com/pytorch/xla/master/contrib/scripts/env-setup.py -o pytorch-xla-env-setup.py\n" +
      "!python pytorch-xla-env-setup.py --version 1.13 --apt-packages libomp5\nos.environ['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'",
    useInstead: "%pip install 'torch==2.9.*' 'torch_xla[tpu]==2.9.*'\n%env PJRT_DEVICE=TPU",
    fixSafety:
      'Unsafe: the setup script run becomes a pinned `%pip install` of the target torch_xla version, download lines and XRT variables are deleted. Reads of ' +
      '`COLAB_TPU_ADDR` are not changed: the code around them needs rewriting for a TPU VM.',
    sources: ['PJRT (docs/source/learn/_pjrt.md:16-31)', 'torch_xla/_internal/tpu.py configure_topology (setdefault of TPU_PROCESS_ADDRESSES: v2.3.0:268, v2.9.0:296)', 'commit f6409de (XRT removed from the main build)', 'README.md wheel table (+xrt 2.1 wheels)'],
    torchtpu: 'Not run under the torchtpu profile: it replaces XRT-era torch_xla setup with a current torch_xla install; for the preview, install torch_tpu as its release notes say.',
  },
  check(ctx) {
    if (!ctx.notebook) return;
    const version = ctx.options.target.version;
    const install = ctx.idiom.profile === 'torch_xla' ? `%pip install 'torch==${version}.*' 'torch_xla[tpu]==${version}.*'` : null;
    const reported = new Set<number>();

    // 1. magic lines: setup script, legacy wheels, cloud-tpu-client, %env XRT_*
    const pips = new Map(pipLines(ctx).map((p) => [p.start, p]));
    for (const m of ctx.notebook.magics) {
      const at = { start: m.start, end: m.end };
      if (/env-setup\.py/.test(m.text)) {
        const runs = /\bpython3?\s+\S*env-setup\.py/.test(m.text);
        ctx.report(at, {
          message: runs
            ? 'The `env-setup.py` script installs legacy XRT-era torch_xla builds: install current wheels with pip instead'
            : 'Downloading `env-setup.py`, the legacy XRT-era setup script: install current wheels with pip instead',
          fix: runs ? (install ? { edits: [replaceRange(m.start, m.end, install)] } : null) : { title: 'Delete the legacy download', edits: [deleteLineInCell(ctx, m.start, m.end)] },
        });
        continue;
      }
      if (WHEELS.test(m.text)) {
        // one replacement install is enough: the setup-script run line gets it when present
        const setupRun = ctx.notebook.magics.some((o) => /\bpython3?\s+\S*env-setup\.py/.test(o.text));
        ctx.report(at, {
          message: 'Wheels from `tpu-pytorch/wheels` are legacy Colab/XRT builds: install `torch_xla[tpu]` from PyPI',
          fix: setupRun ? { title: 'Delete the legacy wheel install', edits: [deleteLineInCell(ctx, m.start, m.end)] } : install ? { edits: [replaceRange(m.start, m.end, install)] } : null,
        });
        continue;
      }
      const pip = pips.get(m.start);
      if (pip && pip.verb === 'install') {
        const toks = tokens(pip.args, pip.argsOffset);
        const client = toks.find((t) => /^cloud-tpu-client\b/.test(t.value));
        if (client) {
          const reqs = toks.filter((t) => !t.value.startsWith('-'));
          ctx.report(client, {
            message: '`cloud-tpu-client` configures legacy TPU Nodes; a TPU VM with PJRT does not use it',
            fix: reqs.length === 1 ? { title: 'Delete the install', edits: [deleteLineInCell(ctx, m.start, m.end)] } : null,
          });
        }
        continue;
      }
      const env = /^\s*%(env|set_env)\s+(XRT_\w+|COLAB_TPU_ADDR)\b/.exec(m.text);
      if (env) {
        ctx.report(at, { message: `\`${env[2]}\` configures the XRT runtime removed in torch_xla 2.1`, fix: { title: 'Delete the XRT setting', edits: [deleteLineInCell(ctx, m.start, m.end)] } });
      }
    }

    // 1b. a commented-out install hint ("uncomment to run on TPU: # !pip install cloud-tpu-client==0.10 torch==1.9.0 <tpu-pytorch wheel>"):
    // whoever follows it installs an XRT-era build; the comment is rewritten to a current install, still commented
    for (const c of ctx.sema.nodes('comment')) {
      const m = /^#\s*([!%]\s*(?:pip3?|python3?\s+-m\s+pip)\s+install\b.*)$/.exec(c.text);
      if (!m || !(WHEELS.test(m[1]) || /\bcloud-tpu-client\b/.test(m[1]) || /env-setup\.py/.test(m[1]))) continue;
      const hash = /^#\s*/.exec(c.text)![0];
      ctx.report(c, {
        severity: 'info',
        message: 'This commented TPU install line is legacy (cloud-tpu-client / `tpu-pytorch` XRT wheels): uncommented, it installs an XRT-era torch_xla; point it at the current `torch_xla[tpu]` wheels',
        fix: install ? { title: 'Rewrite the hint to a current install (kept commented)', applicability: 'safe', edits: [replaceRange(c.startIndex + hash.length, c.endIndex, install)] } : null,
      });
    }

    // 2. Python: XRT / TPU Node variables
    for (const w of envWrites(ctx)) {
      const value = plainString(w.value);
      let message: string | null = null;
      if (LEGACY_VARS.has(w.name) || w.name.startsWith('XRT_')) message = `\`${w.name}\` configures the XRT runtime removed in torch_xla 2.1; PJRT is the only runtime`;
      else if (w.name === 'TPU_NAME' && value !== null && /grpc:\/\//.test(value)) message = '`TPU_NAME` points at a TPU Node gRPC endpoint: current torch_xla runs on the TPU VM itself';
      else if (w.name === 'PJRT_DEVICE' && value === 'TPU_LEGACY') message = '`PJRT_DEVICE=TPU_LEGACY` selects the removed XRT runtime: use `TPU`';
      if (!message) continue;
      reported.add(w.anchor.id);
      const fix: FixDraft = w.name === 'PJRT_DEVICE'
        ? { title: 'Use `PJRT_DEVICE=TPU`', edits: [replaceRange(w.value!.startIndex, w.value!.endIndex, w.value!.text.replace('TPU_LEGACY', 'TPU'))] }
        : { title: `Delete the \`${w.name}\` setting`, edits: [deleteStatementInCell(ctx, w.stmt)] };
      ctx.report(w.anchor, { message, fix });
    }
    // Not reported: removing `TPU_PROCESS_ADDRESSES` (os.environ.pop / del, the Kaggle PT/XLA 2.1 sample). torch_xla
    // sets it with os.environ.setdefault when it configures the TPU processes (_internal/tpu.py:268 at v2.3, :296 at
    // v2.9), so a stale value left by the image would win: the removal is a needed workaround, not legacy setup.
    // reads of COLAB_TPU_ADDR / XRT_TPU_CONFIG
    for (const s of ctx.sema.nodes('string')) {
      const v = stringContent(s);
      if ((v !== 'COLAB_TPU_ADDR' && v !== 'XRT_TPU_CONFIG') || reported.has(s.id)) continue;
      if (!ctx.sema.resolve(enclosingEnvObject(s))?.startsWith('os.environ') && !/environ|getenv/.test(s.parent?.parent?.text ?? '')) continue;
      ctx.report(s, { message: `\`${v}\` only exists on legacy TPU Node / XRT setups; on a TPU VM it is unset` });
    }
  },
});

/** The `os.environ` object around a string key: `os.environ[k]`, `os.environ.get(k)`. */
function enclosingEnvObject(s: Node): Node | null {
  const p = s.parent;
  if (p?.type === 'subscript') return p.childForFieldName('value');
  if (p?.type === 'argument_list') {
    const fn = p.parent?.childForFieldName('function');
    return fn?.type === 'attribute' ? fn.childForFieldName('object') : fn ?? null;
  }
  return null;
}
