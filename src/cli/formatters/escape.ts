/**
 * Text from the workspace (file names, messages quoting code) made safe for a terminal and for CI logs:
 * control characters (ESC sequences, CR, LF: a newline in a file name would start a GitHub Actions
 * workflow command on the next line) and bidirectional overrides are shown escaped.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function termSafe(s: string): string {
  return s.replace(UNSAFE, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const n = c.charCodeAt(0);
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
}
