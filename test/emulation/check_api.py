"""Checks torch_xla references against the emulation at TORCH_XLA_EMULATED_VERSION (used by test/xla-api.test.ts).

stdin: JSON {"sources": [{"id", "original", "fixed"}], "accel": "<accel.py source>" | null}
stdout: JSON {"version", "checked": [dotted names], "problems": [{"id", "name", "error"}], "introduced": {id: [names]}, "accel": {...}}

A reference is a dotted name rooted at an import of torch_xla (`import torch_xla.core.xla_model as xm`,
`from torch_xla.runtime import world_size`, ...), or a call of one with its keyword names. Only the
references a fix introduced are checked: those that occur more often in the fixed text than in the
original.
"""
import ast
import collections
import importlib
import inspect
import json
import os
import sys
import tempfile
import traceback


def _strip_magics(src):
  # notebook cells: shell and magic lines are not Python
  return '\n'.join('' if l.lstrip().startswith(('!', '%')) else l for l in src.split('\n'))


def references(src):
  """Counter of (dotted name, kwargs tuple or None, n positional or -1) for torch_xla references in src."""
  try:
    tree = ast.parse(_strip_magics(src))
  except SyntaxError:
    return None
  aliases = {'torch_xla': 'torch_xla'}  # `import torch_xla.x.y` binds the name torch_xla
  refs = collections.Counter()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name.split('.')[0] == 'torch_xla':
          if a.asname:
            aliases[a.asname] = a.name
          else:
            aliases['torch_xla'] = 'torch_xla'
          refs[(a.name, None, -1)] += 1
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.split('.')[0] == 'torch_xla' and node.level == 0:
      for a in node.names:
        full = f'{node.module}.{a.name}'
        aliases[a.asname or a.name] = full
        refs[(full, None, -1)] += 1

  def dotted(n):
    parts = []
    while isinstance(n, ast.Attribute):
      parts.append(n.attr)
      n = n.value
    if isinstance(n, ast.Name) and n.id in aliases:
      return '.'.join([aliases[n.id]] + parts[::-1])
    return None

  seen_attr = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Call):
      name = dotted(node.func)
      if name:
        kws = tuple(sorted(k.arg for k in node.keywords if k.arg))
        star = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        refs[(name, kws, -1 if star else len(node.args))] += 1
        seen_attr.add(id(node.func))
  for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and id(node) not in seen_attr:
      name = dotted(node)
      # only the outermost attribute of a chain
      if name:
        refs[(name, None, -1)] += 1
  # drop attribute prefixes of longer chains (torch_xla.core in torch_xla.core.xla_model.x)
  return refs


def resolve(name):
  parts = name.split('.')
  obj = None
  err = None
  for i in range(len(parts), 0, -1):
    mod = '.'.join(parts[:i])
    try:
      obj = importlib.import_module(mod)
    except ModuleNotFoundError as e:
      if e.name and not mod.startswith(e.name) and e.name != mod:
        raise
      err = e
      continue
    for attr in parts[i:]:
      obj = getattr(obj, attr)  # AttributeError: absent in this version
    return obj
  raise err or ImportError(name)


def check_call(obj, kws, npos):
  if not callable(obj):
    raise TypeError(f'{obj!r} is not callable')
  try:
    sig = inspect.signature(obj)
  except (TypeError, ValueError):
    return
  args = [None] * max(npos, 0)
  sig.bind_partial(*args, **{k: None for k in kws})


def main():
  req = json.load(sys.stdin)
  version = os.environ.get('TORCH_XLA_EMULATED_VERSION', '2.9')
  problems = []
  checked = set()
  introduced = {}
  unparsed = []
  for src in req.get('sources', []):
    before = references(src['original']) or collections.Counter()
    after = references(src['fixed'])
    if after is None:
      unparsed.append(src['id'])
      continue
    names_before = collections.Counter()
    for (name, _, _), n in before.items():
      names_before[name] += n
    names_after = collections.Counter()
    for (name, _, _), n in after.items():
      names_after[name] += n
    for (name, kws, npos), n in after.items():
      if n <= before.get((name, kws, npos), 0):
        continue
      # a name the fix added must exist; a call shape the fix added (new keywords on the user's own
      # call) must bind, when the name itself resolves
      new_name = names_after[name] > names_before.get(name, 0)
      if new_name:
        introduced.setdefault(src['id'], set()).add(name)
      checked.add(name if kws is None else f'{name}({", ".join(list(kws))})')
      try:
        obj = resolve(name)
      except Exception as e:  # noqa: BLE001
        if new_name:
          problems.append({'id': src['id'], 'name': name, 'kwargs': [], 'error': f'{type(e).__name__}: {e}'})
        continue
      if kws is not None:
        try:
          check_call(obj, kws, npos)
        except Exception as e:  # noqa: BLE001
          problems.append({'id': src['id'], 'name': name, 'kwargs': list(kws), 'error': f'{type(e).__name__}: {e}'})
  out = {'version': version, 'checked': sorted(checked), 'problems': problems, 'unparsed': unparsed,
         'introduced': {k: sorted(v) for k, v in introduced.items()}}
  if req.get('accel'):
    out['accel'] = run_accel(req['accel'], req.get('accel_functions', []))
  json.dump(out, sys.stdout)


def run_accel(source, functions):
  """Imports the generated module under the emulation and calls each function that runs in one process."""
  import torch
  d = tempfile.mkdtemp()
  with open(os.path.join(d, 'accel_under_test.py'), 'w') as f:
    f.write(source)
  sys.path.insert(0, d)
  results = {}
  try:
    accel = importlib.import_module('accel_under_test')
  except Exception as e:  # noqa: BLE001
    return {'import': f'{type(e).__name__}: {e}'}
  model = torch.nn.Linear(3, 2)
  calls = {
      'initialize_cache': lambda: accel.initialize_cache(os.path.join(d, 'xla_cache')),  # first: before any compile
      'backend': lambda: accel.backend(),
      'device': lambda: accel.device(),
      'device_type': lambda: accel.device_type(),
      'is_xla': lambda: accel.is_xla(),
      'manual_seed': lambda: accel.manual_seed(0),
      'autocast': lambda: _autocast(accel, torch, model),
      'optimizer_step': lambda: _step(accel, torch, model),
      'wrap_loader': lambda: [b for b in accel.wrap_loader([torch.zeros(2, 3), torch.ones(2, 3)], accel.device())],
      'sync': lambda: (accel.sync(), accel.sync(wait=True)),
      'save': lambda: accel.save(model.state_dict(), os.path.join(d, 'ckpt.pt')),
      'launch': lambda: accel.launch(_noop, args=(1,)),
      'world_size': lambda: accel.world_size(),
      'rank': lambda: accel.rank(),
      'local_rank': lambda: accel.local_rank(),
      'is_master': lambda: accel.is_master(),
      'master_print': lambda: accel.master_print('accel master_print', file=sys.stderr),
      'add_step_closure': lambda: accel.add_step_closure(lambda *a: None, args=(1,)),
      'memory_info': lambda: _memory(accel),
      'launcher_env': lambda: accel.launcher_env('LOCAL_RANK', -1),
      'xla_loader': lambda: [b for b in accel.xla_loader([torch.zeros(2, 3), torch.ones(2, 3)])],
  }
  order = ['initialize_cache'] + [f for f in functions if f != 'initialize_cache']
  for fn in order:
    if fn not in calls:
      results[fn] = 'not called (no single-process call known to the test)'
      continue
    if not hasattr(accel, fn):
      results[fn] = 'AttributeError: accel has no ' + fn
      continue
    try:
      calls[fn]()
      results[fn] = 'ok'
    except Exception as e:  # noqa: BLE001
      tb = traceback.extract_tb(e.__traceback__)
      results[fn] = f'{type(e).__name__}: {e} (at {tb[-1].filename.split("/")[-1]}:{tb[-1].lineno})'
  results['_backend'] = accel.backend()
  return results


def _noop(index, x):
  assert index == 0 and x == 1


def _autocast(accel, torch, model):
  with accel.autocast():
    y = model(torch.randn(4, 3).to(accel.device()))
  assert y.dtype == torch.bfloat16, y.dtype


def _step(accel, torch, model):
  opt = torch.optim.SGD(model.parameters(), lr=0.1)
  model.to(accel.device())
  model(torch.randn(4, 3).to(accel.device())).sum().backward()
  accel.optimizer_step(opt)
  accel.optimizer_step(opt, barrier=True)


def _memory(accel):
  info = accel.memory_info()
  assert isinstance(info, dict), info


if __name__ == '__main__':
  main()
