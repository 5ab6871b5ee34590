"""torch_xla/debug/metrics.py (v2.3.0..v2.9.0). The emulation counts only its step barriers."""
from .. import _emu


def counter_names():
  return ['MarkStep'] if _emu.STATE.syncs else []


def counter_value(name):
  return _emu.STATE.syncs if name == 'MarkStep' and _emu.STATE.syncs else None


def clear_counters():
  _emu.STATE.syncs = 0


def metric_names():
  return []


def metric_data(name):
  return None


def clear_metrics():
  pass


def clear_all():
  clear_counters()


def metrics_report():
  return f'Counter: MarkStep\n  Value: {_emu.STATE.syncs}\n'


def short_metrics_report(counter_names: list = None, metric_names: list = None):
  return metrics_report()


def executed_fallback_ops():
  return []
