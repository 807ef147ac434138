#!/usr/bin/env bash
# Prepare a host (dev, CI, or production) for agentsh. Idempotent; run as root.
#
#   setup-host.sh [--no-dev] [--venv DIR] [--project DIR]
#
# 1. apt packages: BCC's Python bindings (python3-bpfcc), kernel headers,
#    python3-venv, systemd (for `systemd-analyze verify`), iproute2.
# 2. kernel headers for BCC at /lib/modules/$(uname -r)/build: prefer headers
#    that match the running kernel; fall back to the distro's generic headers
#    (safe because our BPF programs read only UAPI structs; see docs/operations.md).
# 3. mounts BPF needs: tracefs, cgroup2, bpffs (each only when missing).
# 4. a virtualenv from the system interpreter with --system-site-packages so
#    that `import bcc` (Debian's package, not PyPI's unrelated `bcc`) works,
#    with the project installed editable (+dev extras unless --no-dev).
# 5. npm packages the test suite drives (reference MCP servers, Claude Code), dev only.
set -euo pipefail

DEV=1
PROJECT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-dev) DEV=0 ;;
    --venv) VENV="$2"; shift ;;
    --project) PROJECT="$2"; shift ;;
    *) echo "setup-host: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
VENV="${VENV:-$PROJECT/.venv}"

say() { printf 'setup: %s\n' "$*"; }

# run_quiet LOG WHAT CMD...: run CMD with its output in LOG, printing a line
# every HEARTBEAT seconds while it runs (pip and npm are silent for tens of
# seconds), and the tail of LOG if it fails. Returns CMD's status.
HEARTBEAT="${AGENTSH_SETUP_HEARTBEAT:-5}"
run_quiet() {
  local log="$1" what="$2" start rc
  shift 2
  start=$SECONDS
  "$@" >>"$log" 2>&1 &
  local pid=$!
  while ! wait_for_exit "$pid" "$HEARTBEAT"; do
    say "  ... still $what ($((SECONDS - start))s; log: $log)"
  done
  rc=0; wait "$pid" || rc=$?
  [ $rc = 0 ] || { tail -n 40 "$log" >&2; echo "setup-host: $what failed (exit $rc; full log: $log)" >&2; }
  return $rc
}
# wait_for_exit PID SECONDS: 0 once PID has exited, 1 if it still runs after SECONDS.
wait_for_exit() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

if [ "$(id -u)" != 0 ]; then
  echo "setup-host: must run as root (apt, mounts, /lib/modules links)" >&2
  exit 1
fi

# --- 1. apt -----------------------------------------------------------------
KREL="$(uname -r)"
need_pkgs=()
want_pkgs=(python3-bpfcc python3-venv systemd iproute2 openssl linux-headers-amd64)
# python3-seccomp: tests load the BPF layer under the unit's syscall filter (tests/unit_sandbox.py).
[ $DEV = 1 ] && want_pkgs+=(python3-seccomp)
for p in "${want_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
# Headers that match the running kernel exactly, when the distro has them.
if ! [ -e "/lib/modules/$KREL/build/include" ] && apt-cache show "linux-headers-$KREL" >/dev/null 2>&1; then
  dpkg -s "linux-headers-$KREL" >/dev/null 2>&1 || need_pkgs+=("linux-headers-$KREL")
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  say "installing apt packages: ${need_pkgs[*]} (BCC bindings, kernel headers, venv, systemd-analyze, ip, openssl for TLS tests)"
  export DEBIAN_FRONTEND=noninteractive
  aptlog="$(mktemp /tmp/agentsh-setup-apt.XXXXXX.log)"
  run_quiet "$aptlog" "updating the apt package lists" apt-get update -qq || exit 1
  run_quiet "$aptlog" "installing ${need_pkgs[*]}" apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" || exit 1
  rm -f "$aptlog"
else
  say "apt packages present (${want_pkgs[*]})"
fi

# --- 2. kernel headers for BCC ----------------------------------------------
moddir="/lib/modules/$KREL"
if [ -e "$moddir/build/include/linux" ] && [ -e "$moddir/build/Makefile" ] && [ ! -L "$moddir/build" ]; then
  say "kernel headers: $moddir/build matches the running kernel ($KREL); using them"
elif [ -d "/usr/src/linux-headers-$KREL" ]; then
  if [ "$(readlink "$moddir/build" 2>/dev/null)" = "/usr/src/linux-headers-$KREL" ]; then
    say "kernel headers: $moddir/build -> /usr/src/linux-headers-$KREL (already linked; exact match)"
  else
    mkdir -p "$moddir"
    ln -sfn "/usr/src/linux-headers-$KREL" "$moddir/build"
    say "kernel headers: linked $moddir/build -> /usr/src/linux-headers-$KREL (exact match for the running kernel)"
  fi
else
  amd64="$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$amd64" ]; then
    echo "setup-host: no kernel headers found under /usr/src; BPF will be unavailable" >&2
  else
    common="${amd64%-amd64}-common"
    if [ "$(readlink "$moddir/build" 2>/dev/null)" = "$amd64" ] && [ "$(readlink "$moddir/source" 2>/dev/null)" = "$common" ]; then
      say "kernel headers: $moddir/build -> $amd64 (already linked; fallback, no headers for $KREL in the distro)"
    else
      mkdir -p "$moddir"
      ln -sfn "$amd64" "$moddir/build"
      ln -sfn "$common" "$moddir/source"
      say "kernel headers: no headers for $KREL in the distro; linked $moddir/build -> $amd64 and $moddir/source -> $common (fallback; safe because agentsh's BPF reads only UAPI structs)"
    fi
  fi
fi

# --- 3. mounts ----------------------------------------------------------------
mount_if_missing() { # fstype target
  local fstype="$1" target="$2"
  if awk -v t="$target" -v f="$fstype" '$2==t && $3==f {found=1} END {exit !found}' /proc/mounts; then
    say "mount: $fstype already at $target"
  else
    mkdir -p "$target"
    if mount -t "$fstype" "$fstype" "$target" 2>/dev/null; then
      say "mount: mounted $fstype at $target"
    else
      echo "setup-host: could not mount $fstype at $target (BPF layer may be unavailable)" >&2
    fi
  fi
}
mount_if_missing tracefs /sys/kernel/tracing
if ! awk '$3=="cgroup2" {found=1} END {exit !found}' /proc/mounts; then
  mount_if_missing cgroup2 /sys/fs/cgroup/unified
else
  say "mount: cgroup2 already at $(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)"
fi
mount_if_missing bpf /sys/fs/bpf

# --- 4. virtualenv ------------------------------------------------------------
SYSPY=/usr/bin/python3
if [ ! -x "$VENV/bin/python" ]; then
  say "venv: creating $VENV from $SYSPY with --system-site-packages (so Debian's bcc imports)"
  "$SYSPY" -m venv --system-site-packages "$VENV"
fi
stamp="$VENV/.agentsh-installed"
# A strict editable install: a tree of links to the sources that static tools
# (mypy, IDEs) follow, unlike setuptools' import hook (docs/development.md
# "Imports and tools"). Links are per file, so the stamp covers the list of
# files too: adding or moving a module re-runs the install.
want="$( { cat "$PROJECT/pyproject.toml" "$PROJECT/setup.py"; \
          (cd "$PROJECT" && find agent proxy shim bpf policies systemd -path '*/__pycache__' -prune -o -type f -print | LC_ALL=C sort); } \
        | sha256sum | cut -c1-16)-dev$DEV-strict"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "venv: installing agentsh (editable$( [ $DEV = 1 ] && echo ', with dev extras'))"
  piplog="$VENV/pip-install.log"
  : >"$piplog"
  target="$PROJECT"; [ $DEV = 1 ] && target="$PROJECT[dev]"
  if run_quiet "$piplog" "upgrading pip" "$VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip \
     && run_quiet "$piplog" "installing agentsh and its dependencies with pip" \
          "$VENV/bin/python" -m pip install --disable-pip-version-check \
            --config-settings editable_mode=strict -e "$target"; then
    echo "$want" > "$stamp"
  else
    exit 1
  fi
else
  say "venv: $VENV up to date"
fi
if "$VENV/bin/python" -c 'import bcc, sys; sys.exit(0 if hasattr(bcc, "BPF") else 1)' 2>/dev/null; then
  say "bcc: importable from the venv ($("$VENV/bin/python" -c 'import bcc; print(bcc.__file__)'))"
else
  echo "setup-host: bcc is not importable from $VENV (python3-bpfcc missing?)" >&2
fi

# --- 5. npm packages for tests -----------------------------------------------
if [ $DEV = 1 ] && [ -f "$PROJECT/tests/npm/package.json" ]; then
  npmdir="$PROJECT/tests/npm"
  npmstamp="$npmdir/node_modules/.agentsh-installed"
  npmwant="$(sha256sum "$npmdir/package.json" | cut -c1-16)"
  if [ ! -f "$npmstamp" ] || [ "$(cat "$npmstamp")" != "$npmwant" ]; then
    if command -v npm >/dev/null 2>&1; then
      say "npm: installing reference MCP servers and Claude Code for tests into $npmdir"
      # Claude Code's native binary is an optional dependency: npm skips a failed
      # one silently, so check it is there before calling the install done.
      npmlog="$(mktemp /tmp/agentsh-setup-npm.XXXXXX.log)"
      run_quiet "$npmlog" "installing npm packages into $npmdir" \
          bash -c 'cd "$1" && npm install --no-audit --no-fund --loglevel=error' _ "$npmdir" \
        && [ -x "$npmdir/node_modules/@anthropic-ai/claude-code-linux-x64/claude" ] \
        && echo "$npmwant" > "$npmstamp" \
        || echo "setup-host: npm install failed (or Claude Code's native binary is missing); tests needing reference MCP servers or Claude Code will fail" >&2
    else
      echo "setup-host: npm not found; tests needing reference MCP servers will fail" >&2
    fi
  else
    say "npm: reference MCP servers and Claude Code up to date"
  fi
fi
say "done"
