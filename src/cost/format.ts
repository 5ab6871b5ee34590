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

/** Three significant figures, for lenses and summaries: $1,070 · $85,800 · $2.4M. */
export function moneyShort(v: number | null, currency = 'USD'): string {
  if (v === null) return 'n/a';
  if (v >= 1e6) return `${symbol(currency)}${Number((v / 1e6).toPrecision(3))}M`;
  if (v >= 100) return `${symbol(currency)}${Number(v.toPrecision(3)).toLocaleString('en-US')}`;
  return money(v, currency);
}

export function duration(hours: number): string {
  if (hours < 1) return `${Math.round(hours * 60)} min`;
  if (hours < 48) return `${Number(hours.toPrecision(3))} h`;
  return `${Number((hours / 24).toPrecision(3))} days`;
}

export function sig(n: number, digits = 3): string {
  if (n === 0) return '0';
  if (Math.abs(n) >= 1e6 || Math.abs(n) < 1e-3) return n.toExponential(digits - 1).replace('e+', 'e');
  return Number(n.toPrecision(digits)).toLocaleString('en-US');
}

export function pct(x: number): string {
  return `${Number((x * 100).toPrecision(3))}%`;
}
