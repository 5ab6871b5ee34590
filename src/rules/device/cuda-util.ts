/** Helpers of the device family (TPU102–TPU106): guards, scopes and small edit builders. */
import type { Node } from '../../core/parse';
import type { Semantics } from '../../core/semantics';
import { mentionsXla, stringContent } from '../../core/semantics';
import { cudaOnly } from '../../model/guards';
import type { Snippet } from '../../core/idioms';
import type { Edit } from '../../core/types';

/**
 * Whether `node` only runs when CUDA (or MPS) is present: the one model of that question, src/model/guards.ts
 * (CUDA-only `if`/`elif`/`else` arms and ternary arms, `and`/`or` short-circuits, early exits such as
 * `if not torch.cuda.is_available(): return None`, MPS-only branches, flags whose value the program model knows,
 * functions called only under such a guard).
 */
export function cudaGuarded(node: Node): boolean {
  return cudaOnly(node);
}

/** The `if` statement whose condition holds `node` (through `and`/`or`/`not`/parentheses), else null. */
export function conditionOwner(node: Node): { owner: Node; cond: Node } | null {
  let n: Node = node;
  for (let p = node.parent; p; n = p, p = p.parent) {
    if (p.type === 'boolean_operator' || p.type === 'not_operator' || p.type === 'parenthesized_expression' || p.type === 'comparison_operator') continue;
    if ((p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'while_statement') && p.childForFieldName('condition')?.id === n.id) return { owner: p, cond: n };
    if (p.type === 'conditional_expression' && p.namedChildren[1]?.id === n.id) return { owner: p, cond: n };
    if (p.type === 'assert_statement') return { owner: p, cond: n };
    return null;
  }
  return null;
}

/** The whole `if`/`elif`/`else` chain (or ternary) that owns a condition, for XLA-arm checks. */
export function chainOf(owner: Node): Node {
  return owner.type === 'elif_clause' && owner.parent ? owner.parent : owner;
}

/** The chain already has an XLA or TPU arm (or is nested in one). */
export function xlaArmed(sema: Semantics, owner: Node): boolean {
  return mentionsXla(chainOf(owner).text) || sema.inXlaAwareBranch(owner);
}

/** Callee names of calls that only do optional CUDA work, logging or printing. */
/** `fabric.print`, `accelerator.print`: rank-zero printing helpers are diagnostics too. */
const CUDA_ONLY_CALL = /^(torch\.cuda\.|torch\.(xpu|mps|npu|mlu)\.|torch\.backends\.|torch\.set_float32_matmul_precision$|print\w*$|\w+_print$|logging\.|logger\.|log\.|warnings\.warn$)|^\w+\.print$/;
/** `table["gpu_mem_gb"] = Meter(...)`: a memory column of a metrics table (the CUDA arm only adds a log field). */
const MEMORY_KEY = /mem/i;

/**
 * A block whose statements only do optional CUDA work (cudnn flags, CUDA seeding, diagnostics, printing), or the same
 * for another non-TPU backend (`torch.xpu.manual_seed_all`, `torch.mps.set_rng_state`), also in nested `if`s.
 */
export function cudaOnlyBlock(sema: Semantics, block: Node | null): boolean {
  if (!block) return false;
  const stmts = block.namedChildren.filter((s): s is Node => !!s && s.type !== 'comment');
  if (!stmts.length) return false;
  return stmts.every((s) => {
    if (s.type === 'pass_statement') return true;
    // `for i in range(torch.cuda.device_count()): logger.warning(torch.cuda.memory_summary(device=i))` (fairseq trainer's
    // OOM report): a loop of optional CUDA work is optional CUDA work
    if (s.type === 'for_statement') return !s.childForFieldName('alternative') && cudaOnlyBlock(sema, s.childForFieldName('body'));
    // `if rng_state["cuda"] is not None: torch.cuda.set_rng_state(...) else: log.warning(...)`: every arm is optional device work
    if (s.type === 'if_statement') {
      return cudaOnlyBlock(sema, s.childForFieldName('consequence')) && s.childrenForFieldName('alternative').every((alt) =>
        !alt || cudaOnlyBlock(sema, alt.type === 'else_clause' ? alt.childForFieldName('body') : alt.childForFieldName('consequence')));
    }
    // `if kind == "cuda": assert torch.cuda.is_available(), "..."`: checks the CUDA request, never reached on a TPU host
    if (s.type === 'assert_statement') {
      const calls = sema.callsWithin(s);
      return calls.length > 0 && calls.every((c) => CUDA_ONLY_CALL.test(sema.callee(c) ?? c.childForFieldName('function')?.text ?? ''));
    }
    if (s.type !== 'expression_statement') return false;
    const e = s.namedChildren[0];
    if (!e) return false;
    if (e.type === 'call') {
      const name = sema.callee(e) ?? e.childForFieldName('function')?.text ?? '';
      return CUDA_ONLY_CALL.test(name);
    }
    if (e.type === 'assignment') {
      const left = e.childForFieldName('left');
      if (left?.type === 'subscript') {
        const key = left.childForFieldName('subscript');
        return key?.type === 'string' && MEMORY_KEY.test(stringContent(key) ?? '');
      }
      // `net = torch.nn.DataParallel(net)` (kuangliu pytorch-cifar's `if device == 'cuda':` arm): a multi-GPU wrapper that
      // TPU504 reports where it runs; skipping it leaves the module as it was
      const right = e.childForFieldName('right');
      if (left?.type === 'identifier' && right?.type === 'call' && /^torch\.nn\.(parallel\.)?DataParallel$/.test(sema.callee(right) ?? '') &&
        right.childForFieldName('arguments')?.namedChildren[0]?.text === left.text) return true;
      return !!left && /^torch\.(backends|cuda)\./.test(sema.resolve(left) ?? '');
    }
    return false;
  });
}

/** The function (or module) scope of a node. */
export function scopeOf(sema: Semantics, node: Node): Node {
  return sema.enclosingFunction(node) ?? sema.root;
}

/** Whether `node` lies in `scope` and not in a nested function. */
export function directlyIn(sema: Semantics, scope: Node, node: Node): boolean {
  return scopeOf(sema, node).id === scope.id;
}

/** The expression statement when `call` is a whole statement of its own in a block or module, else null. */
export function statementOf(call: Node): Node | null {
  const stmt = call.parent;
  if (stmt?.type !== 'expression_statement' || stmt.namedChildren.length !== 1) return null;
  const block = stmt.parent;
  if (!block || (block.type !== 'block' && block.type !== 'module')) return null;
  return stmt;
}

/** Removes one argument from an argument list with its separating comma. */
export function removeArgument(arg: Node): Edit | null {
  const list = arg.parent;
  if (!list || list.type !== 'argument_list') return null;
  const args = list.namedChildren.filter((a): a is Node => !!a && a.type !== 'comment');
  const i = args.findIndex((a) => a.id === arg.id);
  if (i < 0) return null;
  if (i > 0) return { start: args[i - 1].endIndex, end: arg.endIndex, text: '' };
  if (args.length > 1) return { start: arg.startIndex, end: args[1].startIndex, text: '' };
  return { start: arg.startIndex, end: arg.endIndex, text: '' };
}

/** Keeps the quote style of an original string literal for a `"xla"`-like snippet. */
export function withQuotes(snippet: Snippet, original: Node): Snippet {
  const q = /^[a-zA-Z]*(['"])/.exec(original.text)?.[1];
  if (q === "'" && /^"\w+"$/.test(snippet.text)) return { ...snippet, text: `'${snippet.text.slice(1, -1)}'` };
  return snippet;
}

/** Shortens code for a one-line message. */
export function short(text: string, max = 48): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/**
 * Libraries whose kernels run only on CUDA GPUs: flash-attn, xFormers, apex, Triton, bitsandbytes, DeepSpeed, Mamba,
 * Transformer Engine, Apex's compiled `amp_C` (fairseq's `multi_tensor_l2norm`), and compiled extensions named `*_cuda` /
 * `*_cuda_lib` (flash-attn's `xentropy_cuda_lib`, `rotary_emb`).
 */
export const CUDA_ONLY_MODULE = /^(flash_attn|xformers|apex|amp_C|triton|bitsandbytes|deepspeed|mamba_ssm|causal_conv1d|transformer_engine|liger_kernel|cupy|pycuda|rotary_emb|\w+_cuda(_lib)?)(\.|$)/;

/**
 * Whether a block is a CUDA fast path: it imports or calls a CUDA-only kernel library. On a TPU host the guard that
 * holds it (`if q.device.type == "cuda": return flash_attn_func(...)`) rightly takes the portable path.
 */
export function usesCudaOnlyKernel(sema: Semantics, block: Node | null | undefined): boolean {
  if (!block) return false;
  for (const stmt of [...sema.within('import_statement', block), ...sema.within('import_from_statement', block)]) {
    const mod = stmt.type === 'import_from_statement' ? stmt.childForFieldName('module_name')?.text : stmt.namedChildren[0]?.text.replace(/\s+as\s+\w+$/, '');
    if (mod && CUDA_ONLY_MODULE.test(mod)) return true;
  }
  return sema.callsWithin(block).some((c) => CUDA_ONLY_MODULE.test(sema.callee(c) ?? ''));
}

/**
 * A GPU self-test of a module that does not train (`def test():` with no parameters, run from the `__main__` block of
 * a monkey-patch or kernel module): it checks the CUDA path on purpose and is not part of a program to migrate.
 */
export function gpuSelfTest(sema: Semantics, n: Node): boolean {
  const fn = sema.enclosingFunction(n);
  if (!fn || !/^test(_\w+)?$/.test(fn.childForFieldName('name')?.text ?? '')) return false;
  if (sema.enclosingFunction(fn) || sema.enclosingClass(fn)) return false;
  if ((fn.childForFieldName('parameters')?.namedChildCount ?? 0) > 0) return false;
  return !sema.containsTrainSignal(sema.root);
}
