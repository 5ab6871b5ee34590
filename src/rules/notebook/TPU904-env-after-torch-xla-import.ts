import { defineRule, type FixDraft } from '../../core/rule';
import { insertLineBefore } from '../../core/edits';
import { detectEol } from '../../core/source';
import { atModuleLevel, deleteLineInCell, deleteStatementInCell, envWrites, plainString, torchXlaImports } from './util';

const XLA_ENV = /^(PJRT_DEVICE|XLA_FLAGS|LIBTPU_INIT_ARGS|XLA_\w+|TPU_\w+|PT_XLA_\w+)$/;

export default defineRule({
  id: 'TPU904',
  name: 'env-after-torch-xla-import',
  title: 'XLA/TPU environment variables set after `import torch_xla`',
  severity: 'warning',
  step: 1,
  effort: 1,
  message: 'An XLA/TPU environment variable is set after `import torch_xla`, which reads it at import',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Set the variable before `import torch_xla`' },
  triggers: ['environ', 'putenv', '%env', '%set_env'],
  profiles: ['torch_xla'],
  notebookOnly: true,
  docs: {
    what:
      'Checks notebooks for `os.environ[...] = …`, `os.environ.setdefault(...)`, `os.putenv(...)` and `%env` / `%set_env` of `PJRT_DEVICE`, `XLA_FLAGS`, ' +
      '`LIBTPU_INIT_ARGS`, `XLA_*`, `TPU_*` and `PT_XLA_*` that run after a cell (or an earlier line) imported torch_xla.',
    why:
      '`import torch_xla` processes `XLA_FLAGS` and the libtpu flags (`_setup_xla_flags()`, `_setup_default_env()`; INIT:31-34, 84-99, 184-186) and picks the ' +
      'default `PJRT_DEVICE` (`runtime._maybe_select_default_device()`, INIT:273-274). The kernel keeps that state, so a later assignment may have no effect. ' +
      'Exactly which variables are still read after import is unverified; treat all of them as "set before import".',
    example: "import torch_xla\n\nos.environ['XLA_FLAGS'] = '--xla_tpu_enable_latency_hiding_scheduler=true'",
    useInstead: "import os\nos.environ['XLA_FLAGS'] = '--xla_tpu_enable_latency_hiding_scheduler=true'\nimport torch_xla",
    fixSafety:
      'Safe for literal values: the assignment moves right before the first `import torch_xla` (with `import os` when needed). No fix when the value is computed ' +
      'from variables defined later. Restart the kernel so the import runs again.',
    sources: ['INIT:31-34, 84-99, 184-186, 273-274 (torch_xla/__init__.py)', 'XR (torch_xla/runtime.py: _maybe_select_default_device)'],
    torchtpu: 'Not run under the torchtpu profile: it checks variables that `import torch_xla` reads; which variables torch_tpu reads at import is not public.',
  },
  check(ctx) {
    const imports = torchXlaImports(ctx).filter(atModuleLevel);
    if (!imports.length) return;
    const first = imports[0];
    const eol = detectEol(ctx.text);
    const osBefore = [...ctx.sema.nodes('import_statement')].some((n) => n.startIndex < first.startIndex && /^import\s+([\w.]+\s*,\s*)*os(\s*,|\s*$)/.test(n.text));
    for (const w of envWrites(ctx)) {
      if (!XLA_ENV.test(w.name) || w.stmt.startIndex < first.startIndex || !atModuleLevel(w.stmt)) continue;
      let fix: FixDraft | null = null;
      const literal = w.value === null || plainString(w.value) !== null;
      const root = /^\s*(\w+)/.exec(w.stmt.text)?.[1];
      if (literal && root === 'os' && !w.stmt.text.includes('\n')) {
        const line = osBefore ? w.stmt.text : `import os${eol}${w.stmt.text}`;
        const ins = insertLineBefore(ctx.text, first, line);
        fix = { edits: [deleteStatementInCell(ctx, w.stmt), ins] };
      }
      ctx.report(w.anchor, {
        message: `\`${w.name}\` is set after \`import torch_xla\`, which reads it at import: set it before the import (and restart the kernel)`,
        fix,
      });
    }
    for (const m of ctx.notebook?.magics ?? []) {
      const r = /^\s*%(env|set_env)\s+([A-Za-z_]\w*)\s*[= ]/.exec(m.text);
      if (!r || !XLA_ENV.test(r[2]) || m.start < first.startIndex) continue;
      const s = m.start + m.text.indexOf(r[2]);
      ctx.report({ start: s, end: s + r[2].length }, {
        message: `\`%${r[1]} ${r[2]}\` runs after \`import torch_xla\`, which reads it at import: set it before the import (and restart the kernel)`,
        fix: { edits: [deleteLineInCell(ctx, m.start, m.end), insertLineBefore(ctx.text, first, m.text.trim())] },
      });
    }
  },
});
