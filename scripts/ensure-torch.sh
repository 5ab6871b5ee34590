#!/usr/bin/env bash
# CPU PyTorch for the tests that run Python (`npm run test:unit`: accel.py and fixes on the torch_xla
# emulation; `npm run test:programs`: the fixed training programs in test/programs/): makes
# `/usr/bin/python3 -c 'import torch, torchvision'` work by installing Debian's python3-torch and
# python3-torchvision (PyTorch 1.13 and torchvision 0.14, CPU only) when they are missing. Idempotent:
# does nothing when the import already works. Needs root (or passwordless sudo) to install.
# Under CI=true a failed install fails the phase; otherwise it prints a notice and the tests skip.
set -uo pipefail

PY=/usr/bin/python3
say() { printf '[torch] %s\n' "$*"; }

have_torch() { [ -x "$PY" ] && "$PY" -c 'import torch, torchvision' >/dev/null 2>&1; }

cannot() {
  {
    echo
    echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
    echo "!!  TESTS THAT RUN PYTHON CANNOT RUN: $*"
    echo "!!  (accel.py, the torch_xla emulation and the fixed programs need CPU PyTorch for $PY:"
    echo "!!   apt-get install python3-torch python3-torchvision)"
    echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  } >&2
  if [ "${CI:-}" = true ]; then exit 1; fi
  echo 'torch missing: the tests that need it will be skipped or fail (this is a failure under CI=true)' >&2
  exit 0
}

if have_torch; then
  say "torch $("$PY" -c 'import torch, torchvision; print(torch.__version__, "/ torchvision", torchvision.__version__)') for $PY"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then APT=(apt-get); elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then APT=(sudo -n apt-get); else cannot "not root and no passwordless sudo"; fi
LOG=$(mktemp "${TMPDIR:-/tmp}/ensure-torch.XXXXXX.log")
say "installing Debian's python3-torch python3-torchvision (log: $LOG)"
export DEBIAN_FRONTEND=noninteractive
if ! { "${APT[@]}" update -qq && "${APT[@]}" install -y -qq --no-install-recommends python3-torch python3-torchvision; } >"$LOG" 2>&1; then
  tail -n 20 "$LOG" >&2
  cannot "apt-get install python3-torch python3-torchvision failed (see $LOG)"
fi
have_torch || cannot "installed, but '$PY -c \"import torch, torchvision\"' still fails"
say "installed torch $("$PY" -c 'import torch; print(torch.__version__)') for $PY"
