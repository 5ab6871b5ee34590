/**
 * The webview side of the typed protocol: validates what the host sends (anything malformed is
 * dropped) and posts typed messages to it.
 */
import type { ChecklistVM, FindingVM, HistoryPointVM, StepItemVM, StepVM } from '../src/protocol/checklist';
import type { CostEstimateVM, CostValueVM, CostVM, PricedFindingVM, PricedFindingsVM } from '../src/protocol/cost';
import type { StepActionId, ToHost, ToHostMessage, ToWebviewMessage } from '../src/protocol/messages';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): v is number => isNum(v) && Number.isInteger(v);
const ACTIONS: readonly string[] = ['fixSafe', 'smokeTest', 'resumeScaffold', 'ciWorkflow', 'compileCache'] satisfies StepActionId[];

function finding(v: unknown): v is FindingVM {
  return (
    isObj(v) && isStr(v.rule) && ['error', 'warning', 'info', 'hint'].includes(v.severity as string) && isStr(v.message) && isStr(v.path) && isStr(v.uri) &&
    isInt(v.line) && isInt(v.character) && (v.cell === null || isInt(v.cell)) && isStr(v.docsUrl) && (v.fix === null || ['safe', 'unsafe', 'display'].includes(v.fix as string))
  );
}

function item(v: unknown): v is StepItemVM {
  return isObj(v) && isStr(v.id) && isStr(v.text) && (v.kind === 'manual' || v.kind === 'evidence') && typeof v.met === 'boolean';
}

function step(v: unknown): v is StepVM {
  return (
    isObj(v) && isInt(v.step) && isStr(v.title) && isStr(v.explanation) && ['done', 'in-progress', 'todo'].includes(v.status as string) &&
    Array.isArray(v.items) && v.items.every(item) && Array.isArray(v.findings) && v.findings.every(finding) && isInt(v.open) && isStr(v.note) &&
    Array.isArray(v.actions) && v.actions.every((a) => isObj(a) && ACTIONS.includes(a.id as string) && isStr(a.label))
  );
}

function point(v: unknown): v is HistoryPointVM {
  return isObj(v) && isStr(v.date) && isNum(v.score) && isInt(v.open) && isInt(v.done);
}

export function isChecklistVM(v: unknown): v is ChecklistVM {
  return (
    isObj(v) && (v.profile === 'torch_xla' || v.profile === 'torchtpu') && isNum(v.score) && isInt(v.done) && isInt(v.total) &&
    Array.isArray(v.steps) && v.steps.every(step) && Array.isArray(v.history) && v.history.every(point) && (v.progressError === null || isStr(v.progressError))
  );
}

const isStrs = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);
const isNumOrNull = (v: unknown) => v === null || isNum(v);

function costValue(v: unknown): v is CostValueVM {
  return isObj(v) && isStr(v.key) && isStr(v.label) && isStr(v.display) && isObj(v.source) && isStr(v.source.text);
}

function estimate(v: unknown): v is CostEstimateVM {
  return (
    isObj(v) && isStr(v.hardware) && isStr(v.hardwareName) && isStr(v.slice) && isNum(v.chips) && (v.pricing === 'on-demand' || v.pricing === 'spot') &&
    isNum(v.hours) && isNumOrNull(v.cost) && isObj(v.display) && isStr(v.display.time) && isStr(v.display.cost) && isStr(v.display.range) &&
    isStr(v.display.tokensPerSecond) && isStrs(v.warnings) && typeof v.primary === 'boolean'
  );
}

/** The fields of a CostVM the panel renders, checked. */
export function isCostVM(v: unknown): v is CostVM {
  return (
    isObj(v) && ['ok', 'missing', 'error'].includes(v.status as string) && isStrs(v.files) && isStrs(v.frameworks) &&
    Array.isArray(v.fields) && v.fields.every(costValue) && Array.isArray(v.assumptions) && v.assumptions.every(costValue) &&
    Array.isArray(v.estimates) && v.estimates.every(estimate) &&
    Array.isArray(v.missing) && v.missing.every((m) => isObj(m) && isStr(m.field) && isStr(m.message) && isStr(m.howToSupply)) &&
    (v.error === null || (isObj(v.error) && isStr(v.error.message))) && isStrs(v.warnings)
  );
}

function pricedFinding(v: unknown): v is PricedFindingVM {
  return (
    isObj(v) && isStr(v.rule) && isStr(v.message) && isStr(v.path) && isStr(v.uri) && isInt(v.line) && isInt(v.character) && (v.cell === null || isInt(v.cell)) &&
    Array.isArray(v.lines) && v.lines.every(isInt) && isNum(v.hours) && isNumOrNull(v.cost) && isStr(v.summary) &&
    Array.isArray(v.assumptions) && v.assumptions.every((a) => isObj(a) && isStr(a.key) && isNum(a.value) && isStr(a.unit) && isStr(a.meaning) && isStr(a.source))
  );
}

/** The priced findings (always labelled as an estimate), checked. */
export function isPricedFindingsVM(v: unknown): v is PricedFindingsVM {
  return isObj(v) && v.label === 'estimate' && isStr(v.config) && isStr(v.basis) && Array.isArray(v.findings) && v.findings.every(pricedFinding) && isInt(v.more);
}

/** The message when it is a well-formed ToWebview message, else null. */
export function parseToWebview(msg: unknown): ToWebviewMessage | null {
  if (!isObj(msg) || !isObj(msg.body)) return null;
  const b = msg.body;
  switch (msg.type) {
    case 'state': {
      // `priced` absent reads as null (no training config priced yet)
      const priced = b.priced ?? null;
      return isChecklistVM(b.checklist) && (b.cost === null || isCostVM(b.cost)) && (priced === null || isPricedFindingsVM(priced))
        ? { type: 'state', body: { checklist: b.checklist, cost: b.cost, priced } }
        : null;
    }
    case 'notice':
      return (b.level === 'info' || b.level === 'error') && isStr(b.text) ? { type: 'notice', body: { level: b.level, text: b.text } } : null;
    default:
      return null;
  }
}

/** Builds a typed message for the host. */
export function toHost<K extends keyof ToHost>(type: K, body: ToHost[K]): ToHostMessage {
  return { type, body } as ToHostMessage;
}

/** The event components fire to send a message to the host (main.ts forwards it). */
export const HOST_MESSAGE_EVENT = 'tpu-host-message';
export type HostMessageEvent = CustomEvent<ToHostMessage>;
