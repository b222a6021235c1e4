#!/usr/bin/env bash
# Runs a test command under an FI_EAGAIN storm (the caller shrinks the providers' transmit
# queues) and passes only when the command passes and an engine reports, as it closes
# (LOOM_LOG_LEVEL=info), that it retried submissions the provider refused.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
if ! grep -Eq '[1-9][0-9]* submissions retried after FI_EAGAIN' <<<"$out"; then
  echo "no engine retried a refused submission: the storm did not happen" >&2
  exit 1
fi
grep -Eo '[0-9]+ submissions retried after FI_EAGAIN' <<<"$out" | sort -n | tail -1
