/** Output channels, injectable so tests capture them. */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  isTTY: boolean;
}

/** Set when the reader of stdout went away (`tpu-ready check . | head`): the rest of the output is dropped. */
let stdoutClosed = false;

/**
 * A closed pipe on stdout ends the output, not the run: the command finishes and exits with its own status,
 * as with a reader that read everything (no EPIPE stack trace). The CLI calls this; the language server,
 * whose stdout is the protocol, does not.
 */
export function quietOnClosedStdout(): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') stdoutClosed = true;
    else throw e;
  });
}

export const processIo: Io = {
  out: (s) => {
    if (!stdoutClosed) process.stdout.write(s);
  },
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
};
