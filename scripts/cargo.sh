#!/usr/bin/env bash
# Print the path of cargo: on PATH, in root's ~/.cargo, or in the invoking user's
# ~/.cargo when run under sudo (sudo's secure_path drops ~/.cargo/bin).
set -euo pipefail
if command -v cargo >/dev/null 2>&1; then command -v cargo; exit 0; fi
for home in "${HOME:-/root}" "$(getent passwd "${SUDO_USER:-}" 2>/dev/null | cut -d: -f6)"; do
    if [ -n "$home" ] && [ -x "$home/.cargo/bin/cargo" ]; then echo "$home/.cargo/bin/cargo"; exit 0; fi
done
echo "no cargo found: install Rust >= 1.88 (https://rustup.rs)" >&2
exit 1
