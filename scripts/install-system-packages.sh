#!/usr/bin/env bash
# Installs the Debian packages that the named groups need (data/system-packages.txt) and that are
# missing; installs nothing when all are there. Usage: install-system-packages.sh GROUP... (demo, test, bench).
# As root it runs apt-get itself, otherwise through `sudo -n` when that works without a password;
# failing both it stops with the one command to run. PYTHON (set by the Makefile) is checked for
# `venv` support, which Debian's own python3 needs the python3-venv package for.
set -euo pipefail
list="$(cd "$(dirname "$0")/.." && pwd)/data/system-packages.txt"
groups=" $* "

if ! command -v dpkg-query >/dev/null; then
    echo "not a Debian system: install the equivalents of the packages in $list yourself (groups:$groups)" >&2
    exit 0
fi

is_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
while read -r name group _; do
    case "$name" in "" | "#"*) continue ;; esac
    case "$groups" in *" $group "*) ;; *) continue ;; esac
    is_installed "$name" || missing+=("$name")
done <"$list"
if [ -n "${PYTHON:-}" ] && ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
    missing+=("python3-venv")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "missing Debian packages; run this once, then again: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
echo "installing Debian packages (once): ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
