/** Number formatting shared by the CLI text, the Markdown export and the view model. */
export function money(v: number | null, currency = 'USD'): string {
  if (v === null) return 'n/a';
  const sym = symbol(currency);
  const digits = v >= 100 ? 0 : 2;
  return sym + v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function symbol(currency: string): string {
  return currency === 'USD' ? '$' : currency === 'EUR' ? '€' : currency === 'GBP' ? '£' : `${currency} `;
}

const two = (v: number) => Number(v.toPrecision(2));

/** Two significant figures (an estimate is not more precise): $1,200 · $86,000 · $2.4M · $4.3. */
export function moneyShort(v: number | null, currency = 'USD'): string {
  if (v === null) return 'n/a';
  const sym = symbol(currency);
  if (v >= 1e6) return `${sym}${two(v / 1e6)}M`;
  if (v >= 10) return `${sym}${two(v).toLocaleString('en-US')}`;
  return `${sym}${two(v).toFixed(v >= 1 ? 1 : 2)}`;
}

/** "$930–$1,500": the range first, two significant figures. */
export function moneyRange(lo: number | null, hi: number | null, currency = 'USD'): string {
  if (lo === null || hi === null) return 'n/a';
  const a = moneyShort(lo, currency);
  const b = moneyShort(hi, currency);
  return a === b ? a : `${a}–${b}`;
}

export function duration(hours: number): string {
  if (!Number.isFinite(hours)) return 'never';
  if (hours < 1) return `${two(hours * 60)} min`;
  if (hours < 48) return `${two(hours)} h`;
  return `${two(hours / 24)} days`;
}

/** "1.7–2.1 days" (one unit for both ends). */
export function durationRange(lo: number, hi: number): string {
  if (!Number.isFinite(hi)) return `${duration(lo)}–never`;
  const unit = hi < 1 ? 'min' : hi < 48 ? 'h' : 'days';
  const v = (h: number) => (unit === 'min' ? two(h * 60) : unit === 'h' ? two(h) : two(h / 24));
  const a = v(lo);
  const b = v(hi);
  return a === b ? `${a} ${unit}` : `${a}–${b} ${unit}`;
}

export function sig(n: number, digits = 3): string {
  if (n === 0) return '0';
  if (Math.abs(n) >= 1e6 || Math.abs(n) < 1e-3) return n.toExponential(digits - 1).replace('e+', 'e');
  return Number(n.toPrecision(digits)).toLocaleString('en-US');
}

export function pct(x: number): string {
  return `${Number((x * 100).toPrecision(2))}%`;
}
