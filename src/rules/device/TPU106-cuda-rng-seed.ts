import { defineRule } from '../../core/rule';
import { callArgs } from '../../core/semantics';
import { insertLineAfter } from '../../core/edits';
import { Idioms, type Snippet } from '../../core/idioms';
import { cudaGuarded, directlyIn, scopeOf, short, statementOf } from './cuda-util';
import { cudaOnly } from '../../model/guards';
import type { RuleContext } from '../../core/rule';
import type { Node } from '../../core/parse';

const SEED = new Set(['manual_seed', 'manual_seed_all']);
const STATE = new Set(['get_rng_state', 'get_rng_state_all', 'set_rng_state', 'set_rng_state_all']);
const RANDOM = new Set(['seed', 'seed_all', 'initial_seed']);
/** Calls that already seed or restore the XLA (or TPU) device RNG. */
const XLA_SEEDING = /^(torch_xla\.manual_seed|torch_xla\.core\.xla_model\.(set_rng_state|get_rng_state)|torch_tpu\.|accelerate\.utils\.(random\.)?set_seed$)/;

/** `torch.cuda.<fn>` / `torch.cuda.random.<fn>`: the CUDA RNG function's name. */
const CUDA_RNG_CALL = /^torch\.cuda\.(?:random\.)?(\w+)$/;

export default defineRule({
  id: 'TPU106',
  name: 'cuda-rng-seed',
  title: 'CUDA RNG seeding is a silent no-op for the TPU',
  severity: 'warning',
  step: 10,
  effort: 1,
  message: 'CUDA RNG seeding does not seed the TPU device RNG',
  fix: { availability: 'sometimes', applicability: 'safe', title: 'Also seed the XLA device RNG' },
  triggers: ['cuda'],
  docs: {
    what:
      'Checks for CUDA RNG calls: `torch.cuda.manual_seed`, `manual_seed_all`, `seed`, `seed_all`, `initial_seed`, ' +
      '`get_rng_state(_all)` and `set_rng_state(_all)`, which is how seeding helpers that seed `random`, `numpy`, `torch` and ' +
      '`torch.cuda` show up. A scope (function or module) that already seeds the XLA device (`torch_xla.manual_seed`, ' +
      '`xm.set_rng_state`, Accelerate\'s `set_seed`, or the generated `accel.manual_seed`) is not flagged. In a notebook, or at the top ' +
      'level of a script, with no device randomness in sight (no dropout or stochastic-depth layer, no random draw, and no import that could ' +
      'bring one: a model library, a project module) the seeding finding is info: nothing on the device depends on the seed. A seeding ' +
      'helper inside a function stays a warning (its callers are elsewhere).',
    why:
      'The CUDA seeding functions are documented as "silently ignored" when CUDA is not available (PT:torch/cuda/random.py), and the ' +
      'XLA device has its own RNG: `torch_xla.manual_seed(seed)` calls `xm.set_rng_state(seed)` (TX:229-238). Without it, device-side ' +
      'randomness (dropout, on-device `torch.rand`) is not controlled by the script\'s seed. `torch.cuda.get_rng_state` and ' +
      '`initial_seed` eagerly initialise CUDA and raise on a TPU host.',
    example: 'torch.manual_seed(seed)\ntorch.cuda.manual_seed_all(seed)',
    useInstead:
      'import torch_xla\n\ntorch.manual_seed(seed)\ntorch.cuda.manual_seed_all(seed)   # harmless without CUDA\ntorch_xla.manual_seed(seed)',
    fixSafety:
      'Safe: the fix adds one line after the first CUDA seeding call of the scope and changes nothing else: ' +
      '`torch_xla.manual_seed(seed)` (torch_xla 2.5+; `xm.set_rng_state(seed)` for older targets), dual-path `accel.manual_seed(seed)`, ' +
      'which seeds the host and the active device and keeps CUDA seeding on CUDA. ' +
      'When the CUDA seed sits under `if torch.cuda.is_available():` (never run on a TPU host) the line goes after that `if` chain, at its indentation; ' +
      'no fix when the seed expression is bound inside the chain, or, in dual-path style (`accel.manual_seed` also calls `torch.manual_seed`), unless the chain only seeds or sets `torch.backends` flags right after a `torch.manual_seed` of the same seed. Unsafe: `torch.cuda.get_rng_state()` / ' +
      '`set_rng_state(s)` become `xm.get_rng_state()` / `xm.set_rng_state(s)`; the XLA state is an int seed, not a ByteTensor, so saved ' +
      'checkpoints change shape. Save and restore both sides together.',
    sources: [
      'TX:229-238 torch_xla/torch_xla.py `manual_seed(seed, device=None)` → `xm.set_rng_state(seed, device)` (pytorch/xla@022ecde)',
      'XM: torch_xla/core/xla_model.py `set_rng_state(seed, device=None)`, `get_rng_state(device=None) -> int` (pytorch/xla@fa72136; catalog XM:1453-1480)',
      'huggingface/accelerate src/accelerate/utils/random.py `set_seed`: "if is_torch_xla_available(): xm.set_rng_state(seed)"',
      'PT:torch/cuda/random.py `manual_seed`/`manual_seed_all`/`seed`: "It\'s safe to call this function if CUDA is not available; in that case, it is silently ignored"; `get_rng_state`/`initial_seed`: "This function eagerly initializes CUDA"',
    ],
    torchtpu: 'No preview seeding API is confirmed: the finding says to seed the TPU device RNG as well.',
  },
  check(ctx) {
    const sema = ctx.sema;
    const idiom = ctx.idiom;
    const accelSeed = `${ctx.options.accelModule.split('.').pop()}.manual_seed`;
    const seededScopes = new Set<number>();
    for (const call of sema.nodes('call')) {
      const callee = sema.callee(call) ?? '';
      const text = call.childForFieldName('function')?.text ?? '';
      if (XLA_SEEDING.test(callee) || text === accelSeed) seededScopes.add(scopeOf(sema, call).id);
    }
    const fixedScopes = new Set<number>();
    for (const call of sema.callsResolvedWhere((q) => CUDA_RNG_CALL.test(q))) {
      const m = CUDA_RNG_CALL.exec(sema.callee(call) ?? '');
      if (!m || !(SEED.has(m[1]) || STATE.has(m[1]) || RANDOM.has(m[1]))) continue;
      const fn = m[1];
      const scope = scopeOf(sema, call);
      if (seededScopes.has(scope.id) || sema.inXlaAwareBranch(call)) continue;
      const label = `torch.cuda.${fn}()`;
      let message: string;
      let fix = null;
      // `torch.cuda.manual_seed(s)` then `torch.cuda.manual_seed_all(s)`: one seeding, one finding (on the first; the
      // rest are its related locations, and the fix seeds the XLA RNG after the last)
      const related: { start: number; end: number; message: string }[] = [];
      if (SEED.has(fn) || RANDOM.has(fn)) {
        const stmt = statementOf(call);
        if (stmt && cudaSeedStatement(sema, prevStatement(stmt))) continue;
        for (let next = stmt ? nextStatement(stmt) : null; next && cudaSeedStatement(sema, next); next = nextStatement(next)) {
          related.push({ start: next.startIndex, end: next.endIndex, message: 'the same CUDA seeding' });
        }
      }
      if (SEED.has(fn)) {
        message = `\`${label}\` is ignored without CUDA: the TPU device RNG stays unseeded`;
        const seedArg = callArgs(call).positional[0] ?? callArgs(call).keywords.get('seed')?.childForFieldName('value');
        const stmt = statementOf(call);
        if (seedArg && stmt && !fixedScopes.has(scope.id) && directlyIn(sema, scope, call)) {
          const snip = seedSnippet(idiom, seedArg.text);
          if (snip) {
            fixedScopes.add(scope.id);
            // after the last CUDA seeding statement of the same block, so the seeds stay together
            let last = stmt;
            for (let next = stmt.nextNamedSibling; next; next = next.nextNamedSibling) {
              const c = next.type === 'expression_statement' ? next.namedChildren[0] : null;
              const name = c?.type === 'call' ? /^torch\.cuda\.(?:random\.)?(\w+)$/.exec(sema.callee(c) ?? '')?.[1] : undefined;
              if (name && (SEED.has(name) || RANDOM.has(name))) last = next;
              else if (next.type !== 'comment') break;
            }
            // inside `if torch.cuda.is_available():` the seeding would never run on a TPU host: after the guarded
            // `if` chain instead, at its indentation (or no fix when that is not the same program elsewhere)
            const anchor = cudaOnly(stmt) ? unguardedAnchor(ctx, stmt, seedArg, idiom.dualPath) : last;
            if (anchor) fix = {
              edits: [insertLineAfter(ctx.text, anchor, snip.text)],
              imports: snip.imports,
              needsAccel: snip.needsAccel,
              applicability: 'safe' as const,
              title: `Add \`${short(snip.text, 50)}\``,
            };
          }
        }
      } else if (fn === 'get_rng_state' || fn === 'set_rng_state' || fn === 'initial_seed') {
        if (fn !== 'set_rng_state' && cudaGuarded(call)) continue; // `… if torch.cuda.is_available() else None`: never called on a TPU host
        message =
          fn === 'set_rng_state'
            ? `\`${label}\` is ignored without CUDA: the TPU device RNG state is not restored`
            : `\`${label}\` initialises CUDA and raises on a TPU host`;
        const { positional } = callArgs(call);
        if (fn !== 'initial_seed' && positional.length <= 1 && !callArgs(call).keywords.size) {
          const snip = idiom.xlaOnly(`xm.${fn}(${fn === 'set_rng_state' ? positional[0]?.text ?? '' : ''})`, Idioms.imports.XM);
          if (snip && (fn === 'get_rng_state' || positional.length === 1)) {
            fix = {
              edits: [{ start: call.startIndex, end: call.endIndex, text: snip.text }],
              imports: snip.imports,
              applicability: 'unsafe' as const,
              title: `Use \`${short(snip.text, 40)}\` (an int seed, not a ByteTensor)`,
            };
          }
        }
      } else {
        message = STATE.has(fn)
          ? `\`${label}\` works on CUDA generators only: the TPU device RNG state is not saved or restored`
          : `\`${label}\` is ignored without CUDA: the TPU device RNG stays unseeded`;
      }
      // a notebook or script that seeds at its top level (not a seeding helper that other modules call) and has no device
      // randomness in sight (no dropout, no random draws, no model from a library or another module): the unseeded TPU RNG
      // changes nothing there, so the finding is advice
      const program = ctx.path.endsWith('.ipynb') || !sema.enclosingFunction(call);
      const quiet = program && (SEED.has(fn) || RANDOM.has(fn)) && fn !== 'initial_seed' && !deviceRandomness(ctx);
      ctx.report(call, {
        message: quiet ? `${message} (no device randomness is used in this file, so nothing depends on it yet)` : message,
        severity: quiet ? 'info' : undefined,
        fix,
        related: related.length ? related : undefined,
      });
    }
  },
});

/** Text that draws device random numbers or builds a layer that does (dropout, stochastic depth, sampling). */
const RANDOM_USE = /dropout|drop_path|droppath|stochastic|\brand(n|int|perm|_like|n_like|int_like)?\s*\(|bernoulli|multinomial|\.(normal|uniform|exponential|random|geometric|cauchy|log_normal)_\s*\(|\bnormal\s*\(|\bgumbel|\bsample\w*\s*\(/i;
/** Imports whose code cannot draw device random numbers on its own (a model zoo or a project module could). */
const PLAIN_IMPORT = /^(torch|torch\.(nn|optim|utils|backends|cuda|distributed|multiprocessing|amp|autograd|nn\.functional)|torchvision(\.(transforms|datasets|utils|io))?|torch_xla(\..*)?|numpy|random|os|sys|math|time|json|argparse|pathlib|collections|itertools|functools|typing|dataclasses|logging|warnings|copy|re|glob|shutil|pickle|csv|datetime|tqdm(\..*)?|matplotlib(\..*)?|pandas|PIL(\..*)?|sklearn(\..*)?|scipy(\..*)?|seaborn|IPython(\..*)?|contextlib|__future__)$/;

const randomnessMemo = new WeakMap<object, boolean>();
/**
 * Whether device-side randomness may run in the program this file is part of: the file's text names a random draw or
 * a dropout-like layer, or it imports a module that is not a plain utility (a model library, a project module, a
 * relative import), whose layers the file cannot see. Once per file.
 */
function deviceRandomness(ctx: RuleContext): boolean {
  const sema = ctx.sema;
  let r = randomnessMemo.get(sema);
  if (r !== undefined) return r;
  r = RANDOM_USE.test(ctx.text);
  if (!r) {
    for (const imp of [...sema.nodes('import_statement'), ...sema.nodes('import_from_statement')]) {
      const mods = imp.type === 'import_from_statement'
        ? [imp.childForFieldName('module_name')?.text ?? '.']
        : imp.childrenForFieldName('name').map((n) => (n?.type === 'aliased_import' ? n.childForFieldName('name') : n)?.text ?? '');
      if (mods.some((m) => !PLAIN_IMPORT.test(m))) {
        r = true;
        break;
      }
    }
  }
  randomnessMemo.set(sema, r);
  return r;
}

function prevStatement(stmt: Node): Node | null {
  let p = stmt.previousNamedSibling;
  while (p && p.type === 'comment') p = p.previousNamedSibling;
  return p;
}

function nextStatement(stmt: Node): Node | null {
  let n = stmt.nextNamedSibling;
  while (n && n.type === 'comment') n = n.nextNamedSibling;
  return n;
}

/** `torch.cuda.manual_seed(_all)(s)` / `torch.cuda.seed(_all)()` as a statement of its own. */
function cudaSeedStatement(sema: RuleContext['sema'], stmt: Node | null): boolean {
  const c = stmt?.type === 'expression_statement' && stmt.namedChildren.length === 1 ? stmt.namedChildren[0] : null;
  const name = c?.type === 'call' ? /^torch\.cuda\.(?:random\.)?(\w+)$/.exec(sema.callee(c) ?? '')?.[1] : undefined;
  return !!name && (SEED.has(name) || RANDOM.has(name));
}

/** The statement that seeds the device RNG for the profile and version. */
function seedSnippet(idiom: Idioms, seed: string): Snippet | null {
  if (idiom.profile === 'torch_xla' && !idiom.dualPath && !idiom.at('2.5')) return idiom.xlaOnly(`xm.set_rng_state(${seed})`, Idioms.imports.XM);
  return idiom.manualSeed(seed);
}


/**
 * The statement after which the XLA seeding runs on every host when the CUDA seed sits in a CUDA-only block: the
 * innermost enclosing `if` chain of the same function that is not itself CUDA-only. Null when there is none, when the
 * seed expression names something the chain binds (it would be unbound or different after it), or, in dual-path style
 * (`accel.manual_seed` also reseeds the host RNG with `torch.manual_seed`), unless the chain only seeds or sets backend
 * flags and follows a `torch.manual_seed(<same seed>)`: then the reseed leaves the CPU/CUDA RNG where it was.
 */
function unguardedAnchor(ctx: RuleContext, stmt: Node, seed: Node, dualPath: boolean): Node | null {
  const sema = ctx.sema;
  let anchor: Node | null = null;
  for (let p = stmt.parent; p && p.type !== 'function_definition' && p.type !== 'class_definition' && p.type !== 'lambda'; p = p.parent) {
    if (p.type !== 'if_statement') continue;
    if (!cudaOnly(p)) {
      anchor = p;
      break;
    }
  }
  if (!anchor || (anchor.parent?.type !== 'block' && anchor.parent?.type !== 'module')) return null;
  const seedNames = new Set<string>();
  const collect = (n: Node) => {
    if (n.type === 'identifier') seedNames.add(n.text);
    for (const c of n.namedChildren) if (c) collect(c);
  };
  collect(seed);
  const bound = (n: Node): boolean => {
    if (n.type === 'assignment' || n.type === 'augmented_assignment' || n.type === 'for_statement' || n.type === 'named_expression') {
      const left = n.childForFieldName('left') ?? n.childForFieldName('name');
      const names: string[] = [];
      const walk = (x: Node | null) => {
        if (!x) return;
        if (x.type === 'identifier') names.push(x.text);
        else if (x.type === 'pattern_list' || x.type === 'tuple_pattern' || x.type === 'list_pattern') for (const c of x.namedChildren) walk(c);
      };
      walk(left);
      if (names.some((x) => seedNames.has(x))) return true;
    }
    return n.namedChildren.some((c) => !!c && bound(c));
  };
  if (bound(anchor)) return null;
  if (!dualPath) return anchor;
  // every statement of the chain seeds, sets a `torch.backends` flag, or passes
  const quiet = (block: Node | null): boolean => !!block && block.namedChildren.every((st) => {
    if (!st || st.type === 'comment' || st.type === 'pass_statement') return true;
    if (st.type === 'if_statement') {
      return quiet(st.childForFieldName('consequence')) && st.childrenForFieldName('alternative').every((alt) =>
        !alt || quiet(alt.type === 'else_clause' ? alt.childForFieldName('body') : alt.childForFieldName('consequence')));
    }
    if (st.type !== 'expression_statement' || st.namedChildren.length !== 1) return false;
    const e = st.namedChildren[0]!;
    if (e.type === 'assignment') return /^torch\.backends\./.test(sema.resolve(e.childForFieldName('left')) ?? '');
    if (e.type !== 'call') return false;
    const callee = sema.callee(e) ?? '';
    return /^torch\.cuda\.(random\.)?(manual_seed|manual_seed_all)$/.test(callee) || callee === 'torch.manual_seed' || callee === 'random.seed' || callee === 'numpy.random.seed';
  });
  const wrapper: Node = anchor;
  const arms = [wrapper.childForFieldName('consequence'), ...wrapper.childrenForFieldName('alternative').map((alt) =>
    alt ? (alt.type === 'else_clause' ? alt.childForFieldName('body') : alt.childForFieldName('consequence')) : null)];
  if (!arms.every((b) => quiet(b))) return null;
  // the host RNG was seeded with the same value just before the chain (random/numpy seeds and comments in between)
  for (let prev = anchor.previousNamedSibling; prev; prev = prev.previousNamedSibling) {
    if (prev.type === 'comment') continue;
    const c = prev.type === 'expression_statement' && prev.namedChildren.length === 1 ? prev.namedChildren[0] : null;
    if (c?.type !== 'call') return null;
    const callee = sema.callee(c) ?? '';
    if (callee === 'torch.manual_seed') return callArgs(c).positional[0]?.text === seed.text ? anchor : null;
    if (callee !== 'random.seed' && callee !== 'numpy.random.seed') return null;
  }
  return null;
}
