/**
 * Re-analysis of one document as it is edited: keeps the last tree and text, and re-parses
 * incrementally (tree-sitter's `tree.edit` + `parse(text, oldTree)`) after each change. Pure (no host
 * imports): the language server keeps one per open file or notebook.
 */
import { analyze, analysedText, type Analysis, type SourceDocument } from './engine';
import { treeEditFor, type Tree } from './parse';
import { changedSpan } from './textDiff';
import type { Rule } from './rule';
import type { AnalyzeOptions } from './types';

export { changedSpan };


export class DocumentAnalyzer {
  private tree: Tree | null = null;
  private text: string | null = null;
  /** Whether the last analysis re-used the previous tree. */
  lastIncremental = false;

  /** Analyses `doc` (throws BudgetExceeded past `options.deadline`; the kept tree is dropped then). */
  analyze(doc: SourceDocument, rules: Rule[], options: AnalyzeOptions): Analysis {
    const text = analysedText(doc);
    let old: Tree | null = null;
    if (this.tree && this.text !== null) {
      const span = changedSpan(this.text, text);
      if (span) this.tree.edit(treeEditFor(this.text, span.start, span.oldEnd, span.newText));
      old = this.tree;
    }
    this.tree = null;
    this.text = null;
    this.lastIncremental = !!old;
    let analysis: Analysis | undefined;
    try {
      analysis = analyze(doc, rules, options, old);
    } finally {
      if (old && old !== analysis?.tree) old.delete();
    }
    this.tree = analysis.tree;
    this.text = analysis.tree ? text : null;
    return analysis;
  }

  dispose(): void {
    this.tree?.delete();
    this.tree = null;
    this.text = null;
  }
}
