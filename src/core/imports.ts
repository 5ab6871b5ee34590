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

/** Whether a module-level import already binds what `spec` binds (imports inside functions do not count). */
export function isImported(sema: Semantics, spec: ImportSpec): boolean {
  const aliases = sema.topLevelAliases;
  if (spec.name) return aliases.get(spec.alias ?? spec.name) === `${spec.module}.${spec.name}`;
  if (spec.alias) return aliases.get(spec.alias) === spec.module;
  // `import a.b.c` binds `a`
  const head = spec.module.split('.')[0];
  return sema.topLevelModules.has(spec.module) && aliases.get(head) === head;
}

/** The name `spec` binds in the importing scope: `import a.b` binds `a`. */
export function boundName(spec: ImportSpec): string {
  return spec.name ? spec.alias ?? spec.name : spec.alias ?? spec.module.split('.')[0];
}

function isDeferred(id: Node): boolean {
  // inside a function body or a lambda: runs when called, not when the module (or cell) runs
  for (let p: Node | null = id.parent; p; p = p.parent) {
    if (p.type === 'lambda') return true;
    if (p.type === 'block' && p.parent?.type === 'function_definition') return true;
  }
  return false;
}

/** Whether identifier `id` reads the name (not an attribute, a keyword-argument name, or an import's own name). */
function isReference(id: Node): boolean {
  const p = id.parent;
  if (p?.type === 'attribute' && p.childForFieldName('attribute')?.id === id.id) return false;
  if (p?.type === 'keyword_argument' && p.childForFieldName('name')?.id === id.id) return false;
  let q = p;
  while (q && (q.type === 'dotted_name' || q.type === 'aliased_import')) q = q.parent;
  return !(q && isImportStmt(q));
}

/** Offset of the first read of `name` that runs when the module runs (not inside a function body), or -1. */
export function firstImmediateUse(root: Node, name: string): number {
  // find the spelling in the text, then its node (marshalling every identifier node is slow in web-tree-sitter)
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return -1;
  const text = root.text;
  const re = new RegExp(`(?<![A-Za-z0-9_.])${name}(?![A-Za-z0-9_])`, 'g');
  // the bodies of top-level functions run later: skip them whole
  const bodies: [number, number][] = [];
  for (const n of root.namedChildren) {
    const def = n?.type === 'decorated_definition' ? n.childForFieldName('definition') : n;
    const body = def?.type === 'function_definition' ? def.childForFieldName('body') : null;
    if (body) bodies.push([body.startIndex - root.startIndex, body.endIndex - root.startIndex]);
  }
  let b = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    while (b < bodies.length && bodies[b][1] <= m.index) b++;
    if (b < bodies.length && bodies[b][0] <= m.index) {
      re.lastIndex = bodies[b][1];
      continue;
    }
    const at = root.startIndex + m.index;
    const id = root.descendantForIndex(at, at + name.length - 1);
    // bound by a plain assignment before any read (`string_classes = (str, bytes)`): later reads need no import
    if (id?.type === 'identifier' && id.startIndex === at && id.parent?.type === 'assignment' && id.parent.childForFieldName('left')?.id === id.id && !isDeferred(id)) return -1;
    if (id?.type === 'identifier' && id.startIndex === at && isReference(id) && !isDeferred(id)) return id.startIndex;
  }
  return -1;
}

/** The import statements outside functions and classes (inside top-level `if`/`try` blocks too), in order. */
function topLevelImports(root: Node): Node[] {
  return root.descendantsOfType(['import_statement', 'import_from_statement']).filter((n): n is Node => {
    if (!n) return false;
    for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition' || p.type === 'class_definition') return false;
    return true;
  });
}

/** Offset of the first import outside functions and classes that binds what `spec` binds, or -1. */
export function firstBindingImport(root: Node, spec: ImportSpec): number {
  const name = boundName(spec);
  for (const n of topLevelImports(root)) {
    if (n.type === 'import_statement') {
      for (const c of n.namedChildren) {
        if (!c) continue;
        if (spec.alias ? c.type === 'aliased_import' && c.childForFieldName('alias')?.text === name && c.childForFieldName('name')?.text === spec.module : !spec.name && c.type === 'dotted_name' && c.text === spec.module) return n.startIndex;
      }
    } else if (spec.name && n.childForFieldName('module_name')?.text === spec.module) {
      for (const c of n.childrenForFieldName('name')) {
        if (!c) continue;
        const bound = c.type === 'aliased_import' ? c.childForFieldName('alias')?.text : c.text;
        const orig = c.type === 'aliased_import' ? c.childForFieldName('name')?.text : c.text;
        if (bound === name && orig === spec.name) return n.startIndex;
      }
    }
  }
  return -1;
}

/**
 * The engine's invariant for fixes: every name the fixes' imports bind is imported (outside functions)
 * before the first statement that reads it when the module runs. Returns the import lines that fail it.
 */
export function importsAfterUse(root: Node, specs: ImportSpec[]): string[] {
  const bad: string[] = [];
  const seen = new Set<string>();
  for (const spec of specs) {
    const key = importKey(spec);
    if (seen.has(key)) continue;
    seen.add(key);
    const use = firstImmediateUse(root, boundName(spec));
    if (use < 0) continue;
    const at = firstBindingImport(root, spec);
    if (at < 0 || at > use) bad.push(importKey(spec));
  }
  return [...new Set(bad)];
}

/** The imports outside functions and classes, one spec per bound name (for checking a program's import order). */
export function topLevelImportSpecs(root: Node): ImportSpec[] {
  const out: ImportSpec[] = [];
  for (const n of topLevelImports(root)) {
    if (n.type === 'import_statement') {
      for (const c of n.namedChildren) {
        if (c?.type === 'dotted_name') out.push({ module: c.text });
        else if (c?.type === 'aliased_import') out.push({ module: c.childForFieldName('name')!.text, alias: c.childForFieldName('alias')!.text });
      }
    } else {
      const mod = n.childForFieldName('module_name');
      if (!mod || mod.type === 'relative_import') continue;
      for (const c of n.childrenForFieldName('name')) {
        if (c?.type === 'dotted_name') out.push({ module: mod.text, name: c.text });
        else if (c?.type === 'aliased_import') out.push({ module: mod.text, name: c.childForFieldName('name')!.text, alias: c.childForFieldName('alias')!.text });
      }
    }
  }
  return out;
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

/** A short `try:` / `if …:` block that starts with an import (`try: import wandb except ImportError: …`): part of the import block. */
export function isImportBlock(n: Node): boolean {
  return (n.type === 'try_statement' || n.type === 'if_statement') && /^(try|if)\b[^\n]*:\s*\n\s*(import|from)\b/.test(n.text) && n.text.split('\n').length <= 6;
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
    if (!isImported(sema, s)) return true;
    // bound only after a statement that reads it (a fix inserted the read above the user's import): import it
    // again before that read rather than move the user's import
    const use = firstImmediateUse(tree.rootNode, boundName(s));
    return use >= 0 && firstBindingImport(tree.rootNode, s) > use;
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
      const use = firstImmediateUse(tree.rootNode, boundName(spec));
      if (existing && (use < 0 || existing.startIndex < use)) {
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

  // Never after a statement that reads a name being imported (`import torch; x = torch.zeros(1).cuda()` on one
  // line, a fix's line inserted above the import block's end): then right before that statement, on its own
  // line, or as `import accel; ` when the statement shares its line with the one before it.
  const root = tree.rootNode;
  const namesOf = new Map<string, string[]>();
  for (const spec of remaining) {
    const line = spec.name ? lines.find((l) => l.startsWith(`from ${spec.module} import `))! : importKey(spec);
    namesOf.set(line, [...(namesOf.get(line) ?? []), boundName(spec)]);
  }
  const useOfLines = (ls: string[]): number => {
    let min = -1;
    for (const n of ls.flatMap((l) => namesOf.get(l) ?? [])) {
      const u = firstImmediateUse(root, n);
      if (u >= 0 && (min < 0 || u < min)) min = u;
    }
    return min;
  };
  /** The edit inserting `ls` at `at`, or before the statement of their first use when that comes first. */
  const placed = (at: number, ls: string[], defaultText: string): Edit => {
    const use = useOfLines(ls);
    if (use < 0 || at <= use) return { start: at, end: at, text: defaultText };
    const stmt = top.find((n) => n.startIndex <= use && use < n.endIndex);
    if (!stmt) return { start: at, end: at, text: defaultText };
    const ls0 = text.lastIndexOf('\n', stmt.startIndex - 1) + 1;
    if (/^[ \t]*$/.test(text.slice(ls0, stmt.startIndex))) return { start: ls0, end: ls0, text: ls.map((l) => l + eol).join('') };
    return { start: stmt.startIndex, end: stmt.startIndex, text: ls.map((l) => `${l}; `).join('') };
  };

  // `import torch_xla` right after `import torch` (the patched functions must bind first)
  const torchLine = region.find(importsTorch);
  const xlaFirst = lines.filter((l) => l === 'import torch_xla');
  const others = lines.filter((l) => l !== 'import torch_xla');
  if (torchLine && xlaFirst.length) {
    const at = lineEnd(text, torchLine.endIndex);
    edits.push(placed(at, ['import torch_xla'], `${eol}import torch_xla`));
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
    if (anchor && isImportBlock(n)) {
      anchor = n;
      continue;
    }
    break;
  }
  if (anchor) {
    // after the anchor statement's line (past a trailing comment)
    const at = lineEnd(text, anchor.endIndex);
    edits.push(placed(at, others, others.map((l) => eol + l).join('')));
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
