/**
 * Adds the imports fixes need, once: skips those already bound, merges `from m import a, b` into an
 * existing `from m import …`, and inserts after the module docstring, `from __future__` imports and
 * the leading import block (`import torch_xla` goes right after `import torch`). In notebooks the
 * imports go to the first code cell that imports torch or torch_xla, up to the first cell that uses the names
 * they bind (else the last cell before that use that imports, else the first code cell).
 */
import type { Node, Tree } from './parse';
import type { Semantics } from './semantics';
import type { CellSpan } from './notebook';
import { detectEol } from './source';
import { lineEnd } from './edits';
import type { Edit, ImportSpec } from './types';

export function importKey(spec: ImportSpec): string {
  return spec.name ? `from ${spec.module} import ${spec.name}${spec.alias ? ` as ${spec.alias}` : ''}` : `import ${spec.module}${spec.alias ? ` as ${spec.alias}` : ''}`;
}

/** Whether the file already binds what `spec` binds. */
/** Whether a module-level import already binds what `spec` binds (imports inside functions do not count). */
export function isImported(sema: Semantics, spec: ImportSpec): boolean {
  const aliases = sema.topLevelAliases;
  if (spec.name) return aliases.get(spec.alias ?? spec.name) === `${spec.module}.${spec.name}`;
  if (spec.alias) return aliases.get(spec.alias) === spec.module;
  // `import a.b.c` binds `a`
  const head = spec.module.split('.')[0];
  return sema.topLevelModules.has(spec.module) && aliases.get(head) === head;
}

/** `import torch`, `import torch as t`, `import os, torch`. */
function importsTorch(n: Node): boolean {
  if (n.type !== 'import_statement') return false;
  return n.namedChildren.some((c) => !!c && (c.type === 'dotted_name' ? c.text === 'torch' : c.type === 'aliased_import' && c.childForFieldName('name')?.text === 'torch'));
}

/** `import torch.nn as nn`, `from torch_xla import runtime`, `import os, torch`. */
function importsTorchFamily(n: Node): boolean {
  if (n.type === 'import_from_statement') return /^(torch|torch_xla)(\.|$)/.test(n.childForFieldName('module_name')?.text ?? '');
  if (n.type !== 'import_statement') return false;
  return n.namedChildren.some((c) => {
    const name = c?.type === 'aliased_import' ? c.childForFieldName('name')?.text : c?.type === 'dotted_name' ? c.text : undefined;
    return !!name && /^(torch|torch_xla)(\.|$)/.test(name);
  });
}

function isImportStmt(n: Node): boolean {
  return n.type === 'import_statement' || n.type === 'import_from_statement' || n.type === 'future_import_statement';
}

function isDocstring(n: Node): boolean {
  return n.type === 'expression_statement' && n.namedChildren.length === 1 && n.namedChildren[0]?.type === 'string';
}

/**
 * Edits that add the missing imports. `spans` restricts placement to notebook code cells.
 */
export function importEdits(tree: Tree, text: string, sema: Semantics, specs: ImportSpec[], spans?: CellSpan[]): Edit[] {
  const seen = new Set<string>();
  const missing = specs.filter((s) => {
    const k = importKey(s);
    if (seen.has(k)) return false;
    seen.add(k);
    return !isImported(sema, s);
  });
  if (!missing.length) return [];
  const eol = detectEol(text);
  const top = tree.rootNode.namedChildren.filter((n): n is Node => !!n);
  const edits: Edit[] = [];

  // merge `from m import x` into an existing top-level `from m import ...` (no parentheses, no star)
  const remaining: ImportSpec[] = [];
  for (const spec of missing) {
    if (spec.name) {
      const existing = top.find(
        (n) => n.type === 'import_from_statement' && n.childForFieldName('module_name')?.text === spec.module && !n.text.includes('(') && !n.text.includes('*') && !n.text.includes('\\'),
      );
      if (existing) {
        edits.push({ start: existing.endIndex, end: existing.endIndex, text: `, ${spec.name}${spec.alias ? ` as ${spec.alias}` : ''}` });
        continue;
      }
    }
    remaining.push(spec);
  }
  if (!remaining.length) return edits;

  // group the rest: plain imports, and from-imports merged per module
  const lines: string[] = [];
  const fromGroups = new Map<string, string[]>();
  for (const spec of remaining) {
    if (spec.name) {
      const list = fromGroups.get(spec.module) ?? [];
      list.push(`${spec.name}${spec.alias ? ` as ${spec.alias}` : ''}`);
      fromGroups.set(spec.module, list);
    } else lines.push(importKey(spec));
  }
  for (const [mod, names] of fromGroups) lines.push(`from ${mod} import ${names.join(', ')}`);

  // where: restrict to the chosen notebook cell
  let region = top;
  let regionStart = 0;
  if (spans && spans.length) {
    const within = (s: CellSpan) => top.filter((n) => n.startIndex >= s.start && n.endIndex <= s.end);
    // the cell that imports torch / torch_xla: an earlier `import os` cell may run before the `%pip install` cell.
    // Never after the first cell that uses a name being imported (a fix may have edited an earlier cell): then the
    // last cell up to that use that imports, else the first code cell.
    const bound = remaining.map((s) => (s.name ? s.alias ?? s.name : s.alias ?? s.module.split('.')[0]));
    const names = new Set(bound);
    let firstPos = -1;
    for (const id of tree.rootNode.descendantsOfType('identifier')) {
      if (!id || !names.has(id.text) || (firstPos >= 0 && id.startIndex >= firstPos)) continue;
      const p = id.parent;
      if (p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id) continue;
      if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.id === id.id) continue;
      let q = p;
      while (q && (q.type === 'dotted_name' || q.type === 'aliased_import')) q = q.parent;
      if (q && isImportStmt(q)) continue;
      firstPos = id.startIndex;
    }
    const firstUse = firstPos < 0 ? -1 : spans.findIndex((s) => firstPos >= s.start && firstPos <= s.end);
    const candidates = firstUse >= 0 ? spans.slice(0, firstUse + 1) : spans;
    const cell = candidates.find((s) => within(s).some(importsTorchFamily)) ?? [...candidates].reverse().find((s) => within(s).some(isImportStmt)) ?? candidates[0];
    region = within(cell);
    regionStart = cell.start;
  }

  // `import torch_xla` right after `import torch` (the patched functions must bind first)
  const torchLine = region.find(importsTorch);
  const xlaFirst = lines.filter((l) => l === 'import torch_xla');
  const others = lines.filter((l) => l !== 'import torch_xla');
  if (torchLine && xlaFirst.length) {
    const at = lineEnd(text, torchLine.endIndex);
    edits.push({ start: at, end: at, text: `${eol}import torch_xla` });
  } else others.unshift(...xlaFirst);
  if (!others.length) return edits;

  // after the leading docstring / __future__ / import block
  let anchor: Node | null = null;
  for (const n of region) {
    if (n.type === 'comment') continue;
    if (isImportStmt(n) || (anchor === null && isDocstring(n))) {
      anchor = n;
      continue;
    }
    // keep going past `if TYPE_CHECKING`/try-import blocks only when they are import-only
    if ((n.type === 'try_statement' || n.type === 'if_statement') && anchor && /^(try|if)\b[^\n]*:\s*\n\s*(import|from)\b/.test(n.text) && n.text.split('\n').length <= 6) {
      anchor = n;
      continue;
    }
    break;
  }
  if (anchor) {
    // after the anchor statement's line (past a trailing comment)
    const at = lineEnd(text, anchor.endIndex);
    edits.push({ start: at, end: at, text: others.map((l) => eol + l).join('') });
  } else {
    // no imports: at the top of the region, after comments such as a shebang or encoding line
    let at = regionStart;
    const firstCode = region.find((n) => n.type !== 'comment');
    const leadingComments = region.filter((n) => n.type === 'comment' && (!firstCode || n.endIndex <= firstCode.startIndex));
    if (leadingComments.length && /^#!|coding[:=]/.test(leadingComments[0].text)) {
      const last = leadingComments[leadingComments.findIndex((c) => !/^#!|coding[:=]/.test(c.text)) - 1] ?? leadingComments[0];
      at = text.indexOf('\n', last.endIndex);
      at = at === -1 ? text.length : at + 1;
      if (at === text.length && !text.endsWith('\n')) return [...edits, { start: at, end: at, text: eol + others.join(eol) + eol }];
    }
    edits.push({ start: at, end: at, text: others.join(eol) + eol });
  }
  return edits;
}
