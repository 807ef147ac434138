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
# 5. npm packages the test suite drives (reference MCP servers), dev only.
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

if [ "$(id -u)" != 0 ]; then
  echo "setup-host: must run as root (apt, mounts, /lib/modules links)" >&2
  exit 1
fi

# --- 1. apt -----------------------------------------------------------------
KREL="$(uname -r)"
need_pkgs=()
for p in python3-bpfcc python3-venv systemd iproute2 openssl linux-headers-amd64; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
# Headers that match the running kernel exactly, when the distro has them.
if ! [ -e "/lib/modules/$KREL/build/include" ] && apt-cache show "linux-headers-$KREL" >/dev/null 2>&1; then
  dpkg -s "linux-headers-$KREL" >/dev/null 2>&1 || need_pkgs+=("linux-headers-$KREL")
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  say "installing apt packages: ${need_pkgs[*]} (BCC bindings, kernel headers, venv, systemd-analyze, ip, openssl for TLS tests)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
else
  say "apt packages present (python3-bpfcc python3-venv systemd iproute2 openssl linux-headers-amd64)"
fi

# --- 2. kernel headers for BCC ----------------------------------------------
moddir="/lib/modules/$KREL"
if [ -e "$moddir/build/include/linux" ] && [ -e "$moddir/build/Makefile" ] && [ ! -L "$moddir/build" ]; then
  say "kernel headers: $moddir/build matches the running kernel ($KREL); using them"
elif [ -d "/usr/src/linux-headers-$KREL" ]; then
  mkdir -p "$moddir"
  ln -sfn "/usr/src/linux-headers-$KREL" "$moddir/build"
  say "kernel headers: linked $moddir/build -> /usr/src/linux-headers-$KREL (exact match for the running kernel)"
else
  amd64="$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$amd64" ]; then
    echo "setup-host: no kernel headers found under /usr/src; BPF will be unavailable" >&2
  else
    common="${amd64%-amd64}-common"
    mkdir -p "$moddir"
    ln -sfn "$amd64" "$moddir/build"
    ln -sfn "$common" "$moddir/source"
    say "kernel headers: no headers for $KREL in the distro; linked $moddir/build -> $amd64 and $moddir/source -> $common (fallback; safe because agentsh's BPF reads only UAPI structs)"
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
want="$(sha256sum "$PROJECT/pyproject.toml" | cut -c1-16)-dev$DEV"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "venv: installing agentsh (editable$( [ $DEV = 1 ] && echo ', with dev extras'))"
  piplog="$VENV/pip-install.log"
  target="$PROJECT"; [ $DEV = 1 ] && target="$PROJECT[dev]"
  if "$VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip >"$piplog" 2>&1 \
     && "$VENV/bin/python" -m pip install --disable-pip-version-check -e "$target" >>"$piplog" 2>&1; then
    echo "$want" > "$stamp"
  else
    tail -n 40 "$piplog" >&2
    echo "setup-host: pip install failed (full log: $piplog)" >&2
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
      say "npm: installing reference MCP servers for tests into $npmdir"
      (cd "$npmdir" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1) \
        && echo "$npmwant" > "$npmstamp" \
        || echo "setup-host: npm install failed; tests needing reference MCP servers will fail" >&2
    else
      echo "setup-host: npm not found; tests needing reference MCP servers will fail" >&2
    fi
  else
    say "npm: reference MCP servers up to date"
  fi
fi
say "done"
