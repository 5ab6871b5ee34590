// The main job on the bundled sample workspace: scan, statistics, fixes as a diff, cost estimate.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const cli = (args, title) => {
  process.stdout.write(`\n\x1b[1m$ tpu-ready ${args.join(' ')}\x1b[0m${title ? `   # ${title}` : ''}\n`);
  const r = spawnSync(process.execPath, ['dist/cli.js', ...args], { stdio: 'inherit' });
  if (r.status === 2) process.exit(2);
};

cli(['check', 'examples'], 'every finding, with its checklist step');
cli(['check', 'examples', '--statistics'], 'counts per rule');
cli(['check', 'examples/gpt-cuda/train.py', '--diff', '--unsafe-fixes'], 'the fixes, dual-path style, as a diff (nothing written)');
if (fs.existsSync('src/cli/cost.ts')) cli(['cost', 'examples/gpt-cuda/config.yaml', '--hardware', 'v5e,v6e,a100,h100'], 'training time and cost');
