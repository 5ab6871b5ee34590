"""Runs Python snippets under the torch_xla emulation, each in a forked child of this process (torch is
imported once, torch_xla fresh in every child). Used by test/xla-api.test.ts.

stdin: JSON [{"code", "env": {...}}]; stdout: JSON [{"status", "stdout", "stderr"}]
"""
import json
import os
import sys
import tempfile
import traceback
import warnings

import torch  # noqa: F401  (imported once, before the forks)


def run(code, env):
  out = tempfile.TemporaryFile()
  err = tempfile.TemporaryFile()
  pid = os.fork()
  if pid == 0:  # child
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    os.environ.update(env)
    warnings.simplefilter('default')
    status = 0
    try:
      exec(compile(code, '<snippet>', 'exec'), {'__name__': '__main__'})
    except SystemExit as e:
      status = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001
      traceback.print_exc()
      status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
  _, st = os.waitpid(pid, 0)
  out.seek(0)
  err.seek(0)
  return {'status': os.waitstatus_to_exitcode(st), 'stdout': out.read().decode(), 'stderr': err.read().decode()}


if __name__ == '__main__':
  json.dump([run(s['code'], s.get('env', {})) for s in json.load(sys.stdin)], sys.stdout)
