#!/bin/sh
# Installs the system programs some tests use: bubblewrap (the grading sandbox; without it
# `workbook grade` refuses to run unless given --unsafe-no-sandbox), espeak-ng and sox
# (narration audio) and Chromium (the browser test). Without one, its tests skip and say why.
# Needs apt-get and root (or password-less sudo); otherwise it only reports what is missing.
# `install-system-deps.sh sandbox` installs only what grading needs (bubblewrap).
set -u
here=$(dirname "$0")

# Ubuntu 23.10+ restricts unprivileged user namespaces through AppArmor; bubblewrap (the
# grading sandbox) needs them when the grader is not root. Install the profile allowing it.
allow_bwrap_userns() {
    [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ] || return 0
    [ -d /etc/apparmor.d ] && command -v apparmor_parser >/dev/null 2>&1 || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "note: AppArmor restricts user namespaces here; as root, install" \
             "$here/apparmor/bwrap-userns (see docs/instructors.md)" >&2
        return 0
    fi
    install -m 644 "$here/apparmor/bwrap-userns" /etc/apparmor.d/bwrap-userns &&
        apparmor_parser -r /etc/apparmor.d/bwrap-userns ||
        echo "note: could not load the bubblewrap AppArmor profile" >&2
}
allow_bwrap_userns

missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
if [ "${1:-}" != sandbox ]; then
    command -v espeak-ng >/dev/null 2>&1 || missing="$missing espeak-ng"
    command -v sox >/dev/null 2>&1 || missing="$missing sox libsox-fmt-all"
    command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
fi
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: apt-get not found; tests needing$missing will be skipped" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "note: not root; tests needing$missing will be skipped (install them to run those)" >&2
    exit 0
fi
echo "installing system packages:$missing"
$SUDO apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing \
    >/dev/null 2>&1 || echo "note: could not install$missing; those tests will be skipped" >&2
exit 0
