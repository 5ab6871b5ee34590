/**
 * Validation of what the integration panel sends to the host. The webview is a browser page: its
 * messages are untrusted input, so each is checked against the ToHost map and anything else is dropped.
 */
import type { StepActionId, ToHostMessage } from '../protocol/messages';

const ACTIONS: readonly StepActionId[] = ['fixSafe', 'smokeTest', 'resumeScaffold', 'ciWorkflow', 'compileCache'];
/** Notes longer than this are cut (a note is a few lines of text, not a document). */
export const MAX_NOTE_LENGTH = 10000;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isStep = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 10;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 1e9;

/** The message when it is a well-formed ToHost message, else null. */
export function parseToHost(msg: unknown): ToHostMessage | null {
  if (!isObject(msg) || typeof msg.type !== 'string' || !isObject(msg.body)) return null;
  const b = msg.body;
  switch (msg.type) {
    case 'ready':
      return { type: 'ready', body: {} };
    case 'rescan':
      return { type: 'rescan', body: {} };
    case 'estimateCost':
      return { type: 'estimateCost', body: {} };
    case 'tick':
      if (!isStep(b.step) || typeof b.item !== 'string' || !/^[a-z0-9-]{1,64}$/.test(b.item) || typeof b.checked !== 'boolean') return null;
      return { type: 'tick', body: { step: b.step, item: b.item, checked: b.checked } };
    case 'note':
      if (!isStep(b.step) || typeof b.text !== 'string') return null;
      return { type: 'note', body: { step: b.step, text: b.text.slice(0, MAX_NOTE_LENGTH) } };
    case 'openFinding':
      if (typeof b.uri !== 'string' || b.uri.length > 4096 || !isCount(b.line) || !isCount(b.character) || !(b.cell === null || isCount(b.cell))) return null;
      return { type: 'openFinding', body: { uri: b.uri, line: b.line, character: b.character, cell: b.cell } };
    case 'action':
      if (!isStep(b.step) || typeof b.action !== 'string' || !(ACTIONS as readonly string[]).includes(b.action)) return null;
      return { type: 'action', body: { step: b.step, action: b.action as StepActionId } };
    case 'exportReport':
      if (b.format !== 'md' && b.format !== 'html') return null;
      return { type: 'exportReport', body: { format: b.format } };
    default:
      return null;
  }
}
