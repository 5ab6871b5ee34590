import type { Formatter } from './types';

/** The machine-readable output other tools and the extension rely on (version 1). */
export const jsonFormatter: Formatter = {
  format(report) {
    return (
      JSON.stringify(
        {
          version: 1,
          target: report.target,
          summary: report.summary,
          findings: report.findings,
          notices: report.notices,
        },
        null,
        2,
      ) + '\n'
    );
  },
};
