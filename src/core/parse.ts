import { Language, Parser, type Tree, type Node, type Edit as TsEdit, type Point } from 'web-tree-sitter';
import { installNodeCache } from './nodecache';
import { installMirror } from './mirror';
import { parseBudget } from './budget';

export type { Tree, Node };

let ready: Promise<Language> | undefined;
let language: Language | undefined;
let parser: Parser | undefined;
let wasmMemory: WebAssembly.Memory | undefined;

/**
 * Bytes of tree-sitter's WebAssembly memory: what it has ever needed at once (it grows, never shrinks), from the initial
 * size on. V8 counts its growth as external memory, so the budget's probe sees a parse only once the heap outgrows what
 * earlier parses left free (the bench starts its memory shapes from a small initial memory to see every parse).
 */
export function wasmMemoryBytes(): number {
  return wasmMemory?.buffer.byteLength ?? 0;
}

interface WasmModule {
  _malloc(n: number): number;
  _free(p: number): void;
}
let wasmModule: WasmModule | undefined;

/**
 * Bytes of tree-sitter's WebAssembly heap in use (trees, parser, grammar): its memory minus what malloc can still hand
 * out in 64 KB blocks before the memory grows (free fragments smaller than a block count as used). A probe for the
 * bench, not for a hot path: it allocates the free space and frees it again, and may grow the memory by one step.
 */
export function wasmHeapInUse(): number {
  const mod = wasmModule;
  if (!mod || !wasmMemory) return 0;
  const size = wasmMemory.buffer.byteLength;
  const BLOCK = 64 * 1024;
  const blocks: number[] = [];
  try {
    for (;;) {
      const p = mod._malloc(BLOCK);
      if (!p) break;
      blocks.push(p);
      if (wasmMemory.buffer.byteLength !== size) {
        blocks.pop();
        mod._free(p);
        break;
      }
    }
  } finally {
    for (const p of blocks) mod._free(p);
  }
  return size - blocks.length * BLOCK;
}

/**
 * Loads the tree-sitter runtime and the Python grammar once per process.
 * `wasmDir` holds `web-tree-sitter.wasm` and `tree-sitter-python.wasm` (the extension passes
 * its `dist/`, the CLI its own directory, tests `node_modules`).
 */
export function initParser(wasmDir: string | { runtime: string; grammar: string }, opts: { initialMemoryBytes?: number } = {}): Promise<Language> {
  if (!ready) {
    const runtime = typeof wasmDir === 'string' ? join(wasmDir, 'web-tree-sitter.wasm') : wasmDir.runtime;
    const grammar = typeof wasmDir === 'string' ? join(wasmDir, 'tree-sitter-python.wasm') : wasmDir.grammar;
    // the runtime's memory is ours, to read its size (wasmMemoryBytes); the same as the emscripten default otherwise
    // (web-tree-sitter.cjs initMemory: INITIAL_MEMORY 32 MB, maximum 32,768 pages)
    wasmMemory = new WebAssembly.Memory({ initial: Math.ceil((opts.initialMemoryBytes ?? 32 * 1024 * 1024) / 65536), maximum: 32768 });
    // emscripten makes this object its Module: after init it holds the runtime's malloc and free (wasmHeapInUse)
    const moduleArg = { locateFile: () => runtime, wasmMemory } as object;
    ready = (async () => {
      await Parser.init(moduleArg);
      wasmModule = moduleArg as WasmModule;
      if (!process.env.TPU_READY_NO_NODE_CACHE) installNodeCache();
      // rules navigate a typed-array mirror of each tree through light handles (src/core/mirror.ts)
      if (!process.env.TPU_READY_NO_MIRROR) installMirror(moduleArg, wasmMemory, (text) => parsePython(text));
      const lang = await Language.load(grammar);
      const p = new Parser();
      // ABI mismatches between runtime and grammar only surface here.
      p.setLanguage(lang);
      language = lang;
      parser = p;
      return lang;
    })();
    ready.catch(() => {
      ready = undefined;
    });
  }
  return ready;
}

function join(dir: string, file: string): string {
  return dir.endsWith('/') || dir.endsWith('\\') ? dir + file : `${dir}/${file}`;
}

export function isParserReady(): boolean {
  return parser !== undefined;
}

export function getLanguage(): Language {
  if (!language) throw new Error('tpu-ready: initParser() has not completed');
  return language;
}

/**
 * Parses Python text; pass the previous tree (already `edit()`ed) for an incremental re-parse. While a per-file budget
 * is armed (src/core/budget.ts) the parse itself is stopped when the budget is spent: BudgetExceeded (`parsing`), and
 * the parser is reset so that the next parse starts afresh (tree-sitter resumes a cancelled parse otherwise).
 */
export function parsePython(text: string, oldTree?: Tree | null): Tree {
  if (!parser) throw new Error('tpu-ready: initParser() has not completed');
  const budget = parseBudget();
  const tree = budget ? parser.parse(text, oldTree ?? null, { progressCallback: budget.progress }) : parser.parse(text, oldTree ?? null);
  if (!tree) {
    parser.reset();
    const why = budget?.stopped();
    if (why) throw why;
    throw new Error('tpu-ready: tree-sitter returned no tree');
  }
  return tree;
}

/** Describes a text change for `tree.edit()` from UTF-16 offsets, before an incremental re-parse. */
export function treeEditFor(oldText: string, start: number, oldEnd: number, newText: string): TsEdit {
  const newEnd = start + newText.length;
  const after = oldText.slice(0, start) + newText;
  return {
    startIndex: start,
    oldEndIndex: oldEnd,
    newEndIndex: newEnd,
    startPosition: pointAt(oldText, start),
    oldEndPosition: pointAt(oldText, oldEnd),
    newEndPosition: pointAt(after, newEnd),
  } as TsEdit;
}

function pointAt(text: string, offset: number): Point {
  let row = 0;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    row++;
    lineStart = i + 1;
  }
  return { row, column: offset - lineStart };
}

/** Counts ERROR and MISSING nodes (the fix invariants compare these before and after). */
export function countErrors(tree: Tree): number {
  if (!tree.rootNode.hasError) return 0;
  let n = 0;
  const cursor = tree.walk();
  for (;;) {
    const node = cursor.currentNode;
    if (node.isError || node.isMissing) n++;
    if (node.hasError && cursor.gotoFirstChild()) continue;
    while (!cursor.gotoNextSibling()) {
      if (!cursor.gotoParent()) return n;
    }
  }
}
