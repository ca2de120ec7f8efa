#!/usr/bin/env bash
# Fails when the repository holds what is not source: a tracked file over 1 MiB (generated code
# aside) or an executable binary of any size.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ] && [[ "$(basename "$f")" != zz_generated* ]]; then
		echo "tracked file over 1 MiB: $f ($size bytes)" >&2
		bad=1
	fi
	# ELF, Mach-O (both byte orders, 32/64-bit and universal) and PE/COFF executables.
	case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" in
	7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 4d5a*)
		echo "tracked executable binary: $f" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
exit "$bad"
