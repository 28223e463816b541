# Sourced by scripts/demo and scripts/test: install what cutaway needs on Debian and put it in
# a virtual environment at .venv (Debian's Python refuses system-wide pip installs).
#   APT_PACKAGES  extra Debian packages the calling script needs
#   PIP_EXTRAS    extras of the cutaway package to install, e.g. "[test]"
set -eu
cd "$(dirname "$0")/.."

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=""
command -v gcc >/dev/null || missing="$missing gcc libc6-dev"
[ -e /usr/include/zlib.h ] || missing="$missing zlib1g-dev"  # cw_load's HdrHistogram encoding
python3 -c 'import venv, ensurepip' 2>/dev/null || missing="$missing python3 python3-venv python3-pip"
for package in ${APT_PACKAGES:-}; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $package"
done
if [ -n "$missing" ]; then
    echo "installing Debian packages:$missing" >&2
    sudo_if_needed apt-get update -qq
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q ".${PIP_EXTRAS:-}"
