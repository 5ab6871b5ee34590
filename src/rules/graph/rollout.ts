/**
 * Environment rollout loops (RL: cleanrl, stable-baselines3): a loop that is not a training loop, uploads host data to
 * the device, runs the policy on it, reads the result back to the host and hands it to a host call whose result is
 * uploaded again, next step or the same one (`action.cpu().numpy()` → `env.step(...)` → `torch.Tensor(next_obs).to(device)`).
 * Each iteration is a device round trip the host waits on: TPU201 reports the read (warning, one finding per read,
 * the uploads of what came back as related locations). A read that does not come back to the device (a prediction
 * collected for later) is not a round trip and is not reported here.
 */
import type { Node } from '../../core/parse';
import type { RuleContext } from '../../core/rule';
import { methodName, receiver } from '../../core/semantics';
import { isDeviceCopy } from '../shared';
import { ownStatements } from './generation';
import { HOST_READ_METHODS, short, tensorish } from './util';

export interface RoundTrip {
  loop: Node;
  /** The first host read of the policy's output in one iteration (`actions.cpu()` of `actions.cpu().numpy()`). */
  read: Node;
  /** The host call the read value reaches (`env.step(clipped_actions)`), when one does. */
  step: Node | null;
  /** Uploads of what came back (`obs_as_tensor(self._last_obs, self.device)`, `torch.tensor(reward).to(device)`). */
  uploads: Node[];
}


const memo = new WeakMap<object, RoundTrip[]>();

/** Names an assignment binds: identifiers, and attribute targets by their text (`self._last_obs`). */
function boundNames(a: Node): string[] {
  const left = a.childForFieldName('left');
  if (!left) return [];
  const out: string[] = [];
  const walk = (n: Node) => {
    if (n.type === 'identifier' || n.type === 'attribute') out.push(n.text);
    else if (n.type === 'pattern_list' || n.type === 'tuple_pattern' || n.type === 'list_pattern') for (const c of n.namedChildren) if (c) walk(c);
  };
  walk(left);
  return out;
}

/** Identifiers and attribute texts an expression reads (`self._last_obs` and `self`). */
const namesMemo = new WeakMap<Node, Set<string>>();
function namesIn(ctx: RuleContext, node: Node): Set<string> {
  const hit = namesMemo.get(node);
  if (hit) return hit;
  const s = new Set<string>();
  namesMemo.set(node, s);
  if (node.type === 'identifier' || node.type === 'attribute') s.add(node.text);
  for (const id of ctx.sema.within('identifier', node)) s.add(id.text);
  for (const at of ctx.sema.within('attribute', node)) s.add(at.text);
  return s;
}

function meets(a: Set<string>, b: Set<string>): boolean {
  for (const x of a) if (b.has(x)) return true;
  return false;
}

/** Names the assignments bind from expressions that read `seed` names, closed over the body twice (loop-carried). */
function flowFrom(ctx: RuleContext, assigns: Node[], seed: Set<string>, from = -1): Set<string> {
  const out = new Set(seed);
  for (let pass = 0; pass < 2; pass++) {
    for (const a of assigns) {
      if (pass === 0 && a.startIndex < from) continue;
      const right = a.childForFieldName('right');
      if (right && meets(namesIn(ctx, right), out)) for (const n of boundNames(a)) out.add(n);
    }
  }
  return out;
}

export function roundTrips(ctx: RuleContext): RoundTrip[] {
  const cached = memo.get(ctx.sema);
  if (cached) return cached;
  const out: RoundTrip[] = [];
  const taken = new Set<number>();
  const loops = [...ctx.sema.nodes('for_statement'), ...ctx.sema.nodes('while_statement')].sort((a, b) => a.endIndex - a.startIndex - (b.endIndex - b.startIndex));
  for (const loop of loops) {
    const body = loop.childForFieldName('body');
    // a training or eval loop (or one inside such a loop or helper) reports its reads as such
    if (!body || ctx.sema.hot(loop) || ctx.sema.containsTrainSignal(body)) continue;
    const stmts = ownStatements(body);
    const calls = stmts.filter((n) => n.type === 'call');
    const uploads = calls.filter((c) => isDeviceCopy(ctx, c));
    if (!uploads.length) continue;
    const assigns = stmts.filter((n) => n.type === 'assignment' || n.type === 'augmented_assignment');
    // what the device computes from the uploads this iteration (`logits = agent(next_obs)`, `action = dist.sample()`)
    const seeds = new Set<string>();
    for (const a of assigns) {
      const right = a.childForFieldName('right');
      if (right && uploads.some((u) => u.startIndex >= right.startIndex && u.endIndex <= right.endIndex)) for (const n of boundNames(a)) seeds.add(n);
    }
    const onDevice = flowFrom(ctx, assigns, seeds);
    for (const read of calls) {
      if (taken.has(read.id) || !HOST_READ_METHODS.has(methodName(read) ?? '')) continue;
      const recv = receiver(read);
      if (!recv || (recv.type === 'call' && HOST_READ_METHODS.has(methodName(recv) ?? ''))) continue; // `.cpu().numpy()`: the first read
      let root: Node | null = recv;
      while (root && (root.type === 'subscript' || root.type === 'attribute' || root.type === 'call')) {
        if (root.type === 'attribute' && onDevice.has(root.text)) break;
        root = root.type === 'subscript' ? root.childForFieldName('value') : root.type === 'attribute' ? root.childForFieldName('object') : receiver(root);
      }
      if (!(root && onDevice.has(root.text)) && !tensorish(ctx, recv, false)) continue;
      // where the host value goes: the statement binding it, or the call it is passed to directly
      const stmt = assigns.find((a) => a.startIndex <= read.startIndex && read.endIndex <= a.endIndex);
      const direct = calls.find((c) => c.id !== read.id && (c.childForFieldName('arguments')?.namedChildren ?? []).some((arg) => !!arg && arg.startIndex <= read.startIndex && read.endIndex <= arg.endIndex));
      const start = new Set<string>(stmt ? boundNames(stmt) : []);
      if (direct) {
        const holder = assigns.find((a) => a.startIndex <= direct.startIndex && direct.endIndex <= a.endIndex);
        if (holder) for (const n of boundNames(holder)) start.add(n);
      }
      if (!start.size) continue;
      const back = flowFrom(ctx, assigns, start, read.startIndex);
      // uploads of what came back, not of the read itself (`x = t.cpu()` then `x.to(device)` is one copy each way, reported once)
      const returned = uploads.filter((u) => u !== read && meets(namesIn(ctx, u), back));
      if (!returned.length) continue;
      // the host call on the way (`env.step(clipped_actions)`): the last non-torch, non-NumPy method call reading a
      // host-side name whose result still reaches the uploads (not `self.policy.unscale_action(actions)` before it)
      const hostSide = new Set([...start, ...back]);
      const reaches = (c: Node) => {
        const holder = assigns.find((a) => a.startIndex <= c.startIndex && c.endIndex <= a.endIndex);
        return !!holder && returned.some((u) => meets(namesIn(ctx, u), flowFrom(ctx, assigns, new Set(boundNames(holder)), holder.startIndex)));
      };
      const candidates = calls.filter((c) => c.endIndex > read.endIndex && c.id !== read.id && !isDeviceCopy(ctx, c) && !HOST_READ_METHODS.has(methodName(c) ?? '') && !/^(torch|numpy)\./.test(ctx.sema.callee(c) ?? '') && c.childForFieldName('function')?.type === 'attribute' && meets(namesIn(ctx, c.childForFieldName('arguments') ?? c), hostSide) && reaches(c));
      const step = candidates[candidates.length - 1] ?? null;
      taken.add(read.id);
      out.push({ loop, read, step, uploads: returned });
    }
  }
  memo.set(ctx.sema, out);
  return out;
}

function lineOf(ctx: RuleContext, n: Node): number {
  return n.startPosition.row + 1;
}

/** TPU201: the host read of each rollout round trip (warning), with the uploads of what came back related. */
export function reportRoundTrips(ctx: RuleContext): void {
  for (const t of roundTrips(ctx)) {
    const up = t.uploads[0];
    const via = t.step ? ` for \`${short(t.step.childForFieldName('function')?.text ?? t.step.text, 30)}(...)\`` : '';
    ctx.report(t.read, {
      severity: 'warning',
      message:
        `\`${short(t.read.text, 36)}\` waits for the device every iteration of this loop: the result goes to the host${via} and what comes back is uploaded again ` +
        `(\`${short(up.text, 36)}\`, line ${lineOf(ctx, up)}), so each step is a device round trip the host waits on; ` +
        'step many environments per call (a vectorized env) so each trip carries a batch, or act with a CPU copy of the policy and keep the device for the update',
      related: t.uploads.slice(0, 3).map((u) => ({ start: u.startIndex, end: u.endIndex, message: 'the upload of what the host step returned' })),
    });
  }
}
