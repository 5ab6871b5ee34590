#!/usr/bin/env bash
# End-to-end tests of the extension in a real VS Code and a real browser (`npm run test:e2e`):
#   1. installs what is missing: Debian packages (Chromium, ripgrep, headers for code-server's native
#      modules), code-server and playwright-core into a cache folder outside node_modules (reused);
#   2. builds and packages the extension as a VSIX and checks the tree-sitter wasm files ship in it;
#   3. runs the mocha suite (test/e2e/suite) in code-server's real extension host;
#   4. installs the VSIX in a fresh profile and runs the UI checks (test/e2e/harness/ui-checks.js)
#      on the workbench with headless Chromium, saving screenshots.
# Each phase gets a fresh copy of test/e2e/workspace, a fresh user-data and extensions folder, and its
# own code-server, started in its own process group and stopped by it.
# Without a display, without input, as root. Under CI=true a missing prerequisite fails the run.
#
# Env: TPU_READY_E2E_CACHE (tool cache), E2E_OUT (artifacts; default .ci/out/e2e), CHROMIUM,
#      E2E_GREP (mocha grep: a regular expression over test titles), E2E_SKIP_UI=1 / E2E_SKIP_EXT=1 (run one phase only).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${TPU_READY_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tpu-ready-e2e}
OUT=${E2E_OUT:-$ROOT/.ci/out/e2e}
CS_VERSION=4.100.3   # newest code-server (VS Code 1.100.3) whose engines.node accepts Node 20
PW_VERSION=1.65.1
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
CS_DIR="$CACHE/code-server-$CS_VERSION"
CS="$CS_DIR/node_modules/.bin/code-server"
PW_DIR="$CACHE/playwright-core-$PW_VERSION"
START=$(date +%s)

say() { printf '[e2e] %s\n' "$*"; }

missing() {
  {
    echo
    echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
    echo "!!  END-TO-END TESTS CANNOT RUN: $*"
    echo '!!  (they need code-server, Debian chromium and playwright-core; see scripts/e2e.sh)'
    echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  } >&2
  if [ "${CI:-}" = true ]; then
    echo 'e2e: 0 passed, 1 failed'
    exit 1
  fi
  echo 'e2e: NOT RUN (prerequisites missing; this is a failure under CI=true)' >&2
  exit 0
}

mkdir -p "$CACHE/tmp" "$OUT"
rm -rf "$OUT"/*.png "$OUT"/*.json "$OUT"/*.log "$OUT"/*-vscode-logs

# --- 1. prerequisites -----------------------------------------------------------------------------
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || missing "Node 20 or newer is needed (found $(node -v))"

pkgs=()
for p in chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config make g++ python3 curl unzip fonts-dejavu-core; do
  dpkg -s "$p" >/dev/null 2>&1 || pkgs+=("$p")
done
if [ ${#pkgs[@]} -gt 0 ]; then
  say "installing Debian packages: ${pkgs[*]}"
  if [ "$(id -u)" -eq 0 ]; then APT=(apt-get); elif command -v sudo >/dev/null; then APT=(sudo -n apt-get); else missing "Debian packages ${pkgs[*]} (not root, no sudo)"; fi
  export DEBIAN_FRONTEND=noninteractive
  { "${APT[@]}" update -qq && "${APT[@]}" install -y -qq --no-install-recommends "${pkgs[@]}"; } >"$OUT/apt.log" 2>&1 ||
    missing "apt-get install ${pkgs[*]} failed (see $OUT/apt.log)"
fi
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM"

if [ ! -x "$CS" ]; then
  say "installing code-server $CS_VERSION into $CS_DIR (about a minute)"
  rm -rf "$CS_DIR" && mkdir -p "$CS_DIR"
  # @vscode/ripgrep's postinstall downloads rg from GitHub: pre-seed its download cache with Debian's rg.
  rgcache="$CACHE/tmp/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rgcache"
  tar czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  # unsafe_perm: code-server's postinstall refuses root otherwise; yes: node-pty's postinstall runs `npx node-gyp`.
  (cd "$CS_DIR" && echo '{"private":true}' >package.json &&
    TMPDIR="$CACHE/tmp" npm_config_unsafe_perm=true npm_config_yes=true \
      npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION") >"$OUT/code-server-install.log" 2>&1 ||
    { rm -rf "$CS_DIR"; missing "npm install code-server@$CS_VERSION failed (see $OUT/code-server-install.log)"; }
fi
if [ ! -d "$PW_DIR/node_modules/playwright-core" ]; then
  say "installing playwright-core $PW_VERSION into $PW_DIR"
  mkdir -p "$PW_DIR"
  (cd "$PW_DIR" && echo '{"private":true}' >package.json &&
    npm install --no-audit --no-fund --loglevel=error "playwright-core@$PW_VERSION") >"$OUT/playwright-install.log" 2>&1 ||
    { rm -rf "$PW_DIR"; missing "npm install playwright-core@$PW_VERSION failed (see $OUT/playwright-install.log)"; }
fi
export PLAYWRIGHT_CORE="$PW_DIR/node_modules/playwright-core" CHROMIUM
[ -x "$ROOT/node_modules/.bin/vsce" ] || missing "@vscode/vsce is not installed (run npm ci)"
[ -f "$ROOT/node_modules/mocha/package.json" ] || missing "mocha is not installed (run npm ci)"

# --- 2. build and package ---------------------------------------------------------------------------
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
CSPID=
stop_cs() {
  if [ -n "$CSPID" ]; then
    kill -TERM -- "-$CSPID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 -- "-$CSPID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$CSPID" 2>/dev/null || true
    CSPID=
  fi
}
# keep each phase's VS Code logs (extension host, renderer, the "TPU Readiness" output channel) as artifacts
cleanup() {
  stop_cs
  for d in "$RUN"/*/ud/logs; do [ -d "$d" ] && cp -r "$d" "$OUT/$(basename "$(dirname "$(dirname "$d")")")-vscode-logs"; done
  rm -rf "$RUN"
}
trap cleanup EXIT

say 'building and packaging the extension'
(cd "$ROOT" && node esbuild.mjs --production)
[ -f "$ROOT/dist/test/e2e/index.js" ] || { echo 'dist/test/e2e/index.js was not built' >&2; exit 1; }
VSIX="$RUN/tpu-ready.vsix"
(cd "$ROOT" && node_modules/.bin/vsce package --no-dependencies --skip-license --allow-missing-repository \
  --baseContentUrl https://github.com/tpu-ready/tpu-ready/blob/main --baseImagesUrl https://github.com/tpu-ready/tpu-ready/raw/main \
  -o "$VSIX") >"$OUT/vsce.log" 2>&1 || { cat "$OUT/vsce.log" >&2; exit 1; }
listing=$(unzip -l "$VSIX")
for f in extension/dist/extension.js extension/dist/server.js extension/dist/web-tree-sitter.wasm extension/dist/tree-sitter-python.wasm extension/package.json; do
  grep -q " $f\$" <<<"$listing" || { echo "the VSIX lacks $f:" >&2; echo "$listing" >&2; exit 1; }
done
say "VSIX $(du -k "$VSIX" | cut -f1) KB: extension.js, server.js and both wasm files ship"

# --- 3. code-server per phase ---------------------------------------------------------------------------
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# start_cs NAME [VSIX]: fresh profile + workspace copy in $RUN/NAME, code-server in its own process group
start_cs() {
  local name=$1 vsix=${2:-}
  local P="$RUN/$name"
  mkdir -p "$P/ud/User" "$P/ext" "$P/xdg" "$P/tmp"
  cp -r "$ROOT/test/e2e/workspace" "$P/ws"
  cat >"$P/ud/User/settings.json" <<'JSON'
{
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "security.workspace.trust.enabled": false,
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "files.autoSave": "off",
  "editor.codeActionWidget.includeNearbyQuickFixes": false,
  "python.defaultInterpreterPath": "/usr/bin/python3"
}
JSON
  local args=(--auth none --disable-telemetry --disable-update-check --disable-workspace-trust
    --disable-getting-started-override --user-data-dir "$P/ud" --extensions-dir "$P/ext")
  if [ -n "$vsix" ]; then
    XDG_CONFIG_HOME="$P/xdg" TMPDIR="$P/tmp" "$CS" "${args[@]}" --install-extension "$vsix" >"$OUT/$name-install.log" 2>&1 ||
      { cat "$OUT/$name-install.log" >&2; return 1; }
  fi
  PORT=$(free_port)
  XDG_CONFIG_HOME="$P/xdg" TMPDIR="$P/tmp" E2E_OUT="$OUT" \
    setsid "$CS" "${args[@]}" --bind-addr "127.0.0.1:$PORT" >"$OUT/$name-code-server.log" 2>&1 </dev/null &
  CSPID=$!
  for _ in $(seq 1 300); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && { WS="$P/ws"; return 0; }
    kill -0 "$CSPID" 2>/dev/null || break
    sleep 0.2
  done
  cat "$OUT/$name-code-server.log" >&2
  return 1
}

ext_rc=0
ui_rc=0
if [ "${E2E_SKIP_EXT:-}" != 1 ]; then
  say 'extension-host tests (mocha in the real extension host)'
  t=$(date +%s)
  start_cs ext || { echo 'code-server did not start' >&2; exit 1; }
  node "$ROOT/test/e2e/harness/ext-tests.js" "$PORT" "$WS" "$ROOT" "$ROOT/dist/test/e2e/index.js" 2>&1 | tee "$OUT/ext-tests.log" || ext_rc=1
  # a failure: the language server's own account (its output channel) goes in the printed log, not only in the artifacts
  if [ "$ext_rc" -ne 0 ]; then
    find "$RUN/ext/ud/logs" -name 'TPU Readiness.log' -exec sh -c 'echo "[e2e] last lines of the TPU Readiness output channel:"; tail -n 40 "$1"' _ {} \; 2>/dev/null || true
  fi
  stop_cs
  say "extension-host tests took $(($(date +%s) - t)) s"
fi
if [ "${E2E_SKIP_UI:-}" != 1 ]; then
  say 'UI checks (playwright on the workbench, VSIX installed)'
  t=$(date +%s)
  start_cs ui "$VSIX" || { echo 'code-server did not start' >&2; exit 1; }
  node "$ROOT/test/e2e/harness/ui-checks.js" "$PORT" "$WS" "$OUT" 2>&1 | tee "$OUT/ui-checks.log" || ui_rc=1
  stop_cs
  say "UI checks took $(($(date +%s) - t)) s"
fi

# --- 4. summary ---------------------------------------------------------------------------------------
summary=$(node -e '
  const fs = require("fs"), path = require("path");
  const out = process.argv[1], skip = { ext: process.argv[2] === "1", ui: process.argv[3] === "1" };
  let passed = 0, failed = 0;
  for (const [name, file] of [["ext", "ext-tests.json"], ["ui", "ui-checks.json"]]) {
    if (skip[name]) continue;
    try {
      const r = JSON.parse(fs.readFileSync(path.join(out, file), "utf8"));
      passed += r.passes; failed += r.failures;
      for (const f of r.failed || []) console.error("FAILED: " + f.split("\n").slice(0, 25).join("\n  "));
    } catch { failed += 1; console.error(`FAILED: ${name} phase produced no results (${file})`); }
  }
  console.log(`${passed} ${failed}`);
' "$OUT" "${E2E_SKIP_EXT:-}" "${E2E_SKIP_UI:-}")
read -r passed failed <<<"$summary"
if [ "$ext_rc" -ne 0 ] || [ "$ui_rc" -ne 0 ]; then [ "$failed" -gt 0 ] || failed=1; fi
grep -h '^\s*\[timing\]' "$OUT/ext-tests.log" "$OUT/ui-checks.log" 2>/dev/null | sed 's/^\s*/[e2e] /' || true
say "screenshots and logs: $OUT"
say "took $(($(date +%s) - START)) s"
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
