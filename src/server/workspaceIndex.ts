/**
 * Project scope in the language server (issue 9, moved here from the extension host with issue 13): one
 * `ProjectIndex` per workspace folder, reading open documents first and the disk otherwise. The server feeds it
 * every analysed Python text before the analysis (so rules follow calls into the other modules) and re-analyses
 * the open files that import a changed module and the open modules it imports (a helper's hot facts come from its
 * importers' loops: the folder's Python files are listed for those reverse edges); files changed, created or deleted on disk
 * (`workspace/didChangeWatchedFiles`) and documents closed (back to their disk text) do the same.
 * Reads files only: nothing in the workspace is executed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { listPythonFiles } from '../cli/process';
import { normalizePath, ProjectIndex, type ProjectView } from '../model/project';

/** Modules larger than this are not read from disk for project scope (tpuReady.maxFileSize decides for open ones). */
const MAX_MODULE_BYTES = 1_000_000;

export function readModule(p: string): string | null {
  try {
    const st = fs.statSync(p);
    if (!st.isFile() || st.size > MAX_MODULE_BYTES) return null;
    return fs.readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

const within = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);

export class WorkspaceIndex {
  private readonly indexes = new Map<string, ProjectIndex>();

  /**
   * `folders()`: the workspace folders (absolute paths); `openText(path)`: the editor's text of an open
   * document at that normalized path, else null.
   */
  constructor(
    private readonly folders: () => readonly string[],
    private readonly openText: (normalizedPath: string) => string | null,
  ) {}

  /** The index of the innermost workspace folder holding `file`, or null (files outside every folder). */
  indexFor(file: string): ProjectIndex | null {
    let best: string | null = null;
    for (const f of this.folders()) if (within(file, f) && (!best || f.length > best.length)) best = f;
    if (!best) return null;
    let index = this.indexes.get(best);
    if (!index) {
      // listing the folder's Python files gives the reverse edges (a helper module learns that another module's
      // training loop calls it), as the CLI has them
      // the engine names a file by its folder-relative path (what it reports): the index resolves those from the folder
      index = new ProjectIndex([best], { readFile: (p) => this.openText(normalizePath(p)) ?? readModule(p), listPython: listPythonFiles }, { cwd: best });
      this.indexes.set(best, index);
    }
    return index;
  }

  /** The file's text changed (null: deleted): the files whose analysis may change (itself first, then its dependants). */
  update(file: string, text: string | null): string[] {
    if (!file.endsWith('.py')) return [];
    const index = this.indexFor(file);
    return index ? index.update(file, text) : [];
  }

  dependants(file: string): string[] {
    return this.indexFor(file)?.dependants(file) ?? [];
  }

  /** The modules `file` imports (bounded hops, as last loaded): what its calls into them make hot can change. */
  dependencies(file: string): string[] {
    if (!file.endsWith('.py')) return [];
    return this.indexFor(file)?.dependencies(file) ?? [];
  }

  /**
   * Before analysing `file` (its text already given to `update`): its index, with the modules it imports loaded;
   * for a notebook, the index its imports resolve in (loaded as the rules follow them).
   */
  viewFor(file: string): ProjectView | null {
    const notebook = file.endsWith('.ipynb');
    if (!file.endsWith('.py') && !notebook) return null;
    const index = this.indexFor(file);
    if (!index) return null;
    // a notebook's imports are read from its cells by the rules (the index would parse the JSON on disk)
    if (!notebook) index.load(file);
    return index;
  }

  /** Workspace folders changed: every index is rebuilt on demand. */
  reset(): void {
    for (const i of this.indexes.values()) i.dispose();
    this.indexes.clear();
  }
}
