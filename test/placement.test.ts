/**
 * Programs that place nothing on an accelerator (src/model/placement.ts, TPU114). One training loop, many set-ups:
 * a set-up that places nothing gets TPU114 and no device-work finding (TPU201, TPU204); any sign that a device may be
 * chosen (a device argument, a guarded `.cuda()`, a project import, a device parameter) keeps the program device code:
 * no TPU114, and the device-work rules report as before.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { init } from './setup';
import { analyze, locateAll, pythonDocument } from '../src/core/engine';
import { RULES_BY_ID } from '../src/rules';
import { DEFAULT_OPTIONS } from '../src/core/types';

beforeAll(async () => {
  await init();
});

const HEADER = 'import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n';

/** The shared loop, indented to `indent`; `dev` is the expression batches move with (or none). */
function loop(indent: string, dev?: string): string {
  const mv = (v: string) => (dev ? `${v}.to(${dev})` : v);
  return [
    'optimizer = torch.optim.SGD(model.parameters(), lr=0.1)',
    'for step in range(100):',
    '    x = torch.randn(16, 8)',
    '    y = torch.randint(0, 2, (16,))',
    `    loss = F.cross_entropy(model(${mv('x')}), ${mv('y')})`,
    '    optimizer.zero_grad()',
    '    loss.backward()',
    '    optimizer.step()',
    '    print(step, loss.item())',
  ].map((l) => indent + l).join('\n') + '\n';
}

const CASES: { name: string; text: string; cpuOnly: boolean }[] = [
  { name: 'a pure-CPU program', cpuOnly: true, text: HEADER + 'model = nn.Linear(8, 2)\n' + loop('') },
  { name: 'a dtype-only .to()', cpuOnly: true, text: HEADER + 'model = nn.Linear(8, 2).to(torch.float32)\n' + loop('') },
  {
    name: 'a device from argparse',
    cpuOnly: false,
    text: HEADER + 'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--dev", default="cpu")\nargs = parser.parse_args()\nmodel = nn.Linear(8, 2).to(torch.device(args.dev))\n' + loop(''),
  },
  { name: 'a guarded .cuda()', cpuOnly: false, text: HEADER + 'import sys\nmodel = nn.Linear(8, 2)\nif len(sys.argv) > 1:\n    model.cuda()\n' + loop('') },
  { name: 'a project import (may place the model)', cpuOnly: false, text: HEADER + 'from models import build_model\nmodel = build_model()\n' + loop('') },
  { name: 'a device parameter', cpuOnly: false, text: HEADER + 'def run(dev):\n    model = nn.Linear(8, 2).to(dev)\n' + loop('    ', 'dev') },
];

function rulesFired(text: string): Set<string> {
  const doc = pythonDocument('train.py', text);
  return new Set(locateAll(analyze(doc, [...RULES_BY_ID.values()], DEFAULT_OPTIONS)).map((f) => f.rule));
}

describe('programs that place nothing on an accelerator', () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.cpuOnly ? 'TPU114 only' : 'device code'}`, () => {
      const fired = rulesFired(c.text);
      if (c.cpuOnly) {
        expect(fired.has('TPU114')).toBe(true);
        expect(fired.has('TPU201') || fired.has('TPU204')).toBe(false);
      } else {
        expect(fired.has('TPU114')).toBe(false);
        expect(fired.has('TPU204')).toBe(true);
      }
    });
  }
});
