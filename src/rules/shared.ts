/** Helpers shared by rule families (not detection primitives: those live in core/semantics). */
import type { Node } from '../core/parse';
import type { RuleContext } from '../core/rule';
import type { Snippet } from '../core/idioms';

/**
 * The device expression a fix should use at `node`: an existing `device` variable bound in the
 * same function or at module level (reused as the catalog advises), else the profile's idiom.
 */
export function deviceExprFor(ctx: RuleContext, node: Node): Snippet {
  const fn = ctx.sema.enclosingFunction(node);
  for (const name of ['device', 'dev']) {
    const bound = ctx.sema.bindings(name).some((v) => {
      const owner = ctx.sema.enclosingFunction(v);
      return (owner === null || owner.id === fn?.id) && v.startIndex < node.startIndex;
    });
    const param = fn?.childForFieldName('parameters')?.namedChildren.some((p) => p?.text === name || p?.childForFieldName('name')?.text === name);
    if (bound || param) return { text: name, imports: [], needsAccel: false };
  }
  return ctx.idiom.device();
}
