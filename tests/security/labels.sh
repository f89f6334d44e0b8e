#!/usr/bin/env bash
# A trace handed to the CLI may be hostile: its communicator name (NCCL's
# commName, the application's) is written here with a terminal escape, a
# line break and a right-to-left override. No text view may pass a control
# byte to the terminal or start a forged line (the reader cleans every label:
# lens_label_clean). The same for the names of the files in a directory
# handed to the CLI (lens_cli_shown). Usage: labels.sh BUILD_DIR
set -euo pipefail
build=$1
lens=$build/bin/nccl-lens
tmp=$(mktemp -d /tmp/lens-labels-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$lens" replay --quiet --scenario allreduce --nodes 1 --ranks-per-node 2 --iters 3 --out "$tmp/tr" >/dev/null
python3 - "$tmp"/tr/*.lens <<'PY'
import struct, sys
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8): crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xffffffff
evil = b'ev|l\x1b]0;owned\x07\x1b[31m\nFORGED line\xe2\x80\xaerev'
for path in sys.argv[1:]:
    d = bytearray(open(path, 'rb').read())
    n = 0
    i = d.find(b'replay-world')
    while i >= 0:
        d[i:i + len(evil)] = evil
        n += 1
        i = d.find(b'replay-world', i + 1)
    assert n, 'no comm name to forge in ' + path
    off = 64  # the chunks' CRCs again, so that the reader, not the CRC, meets the name
    while off + 32 <= len(d):
        magic, typ, flags, plen, pcrc, seq, sess, hcrc = struct.unpack_from('<IHHIIQII', d, off)
        if magic != 0x4B484C43: break
        if typ == 2:  # COMM (trace_format.h)
            pcrc = crc32c(bytes(d[off + 32: off + 32 + plen]))
            hdr = struct.pack('<IHHIIQI', magic, typ, flags, plen, pcrc, seq, sess)
            d[off: off + 32] = hdr + struct.pack('<I', crc32c(hdr))
        off += 32 + plen + ((8 - (plen & 7)) & 7)
    open(path, 'wb').write(d)
PY
fail=0
# What a view wrote ($2) holds no control byte, no line that starts a forged one, no direction override.
clean_out() {
  local what=$1 out=$2
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$out"; then echo "FAIL: $what writes a control byte"; fail=1; fi
  if grep -q '^FORGED' <<<"$out"; then echo "FAIL: $what starts a forged line"; fail=1; fi
  if grep -q $'\xe2\x80\xae' <<<"$out"; then echo "FAIL: $what writes a direction override"; fail=1; fi
  echo "ok: $what"
}
# views that name the communicator must show it (cleaned), the others only stay clean
for view in summary job hang report "summary --wide" "job --all" net validate; do
  # shellcheck disable=SC2086
  out=$("$lens" $view "$tmp/tr" 2>&1) || true
  case $view in net|validate) ;; *)
    # (the report's Markdown escapes | and ] on top: lens_fmt_md)
    if ! grep -qF -e 'owned??' <<<"$out"; then echo "FAIL: $view does not show the communicator"; fail=1; fi ;;
  esac
  clean_out "$view" "$out"
done

# A directory handed to the CLI may hold files another user named: an escape, a line break and a direction
# override in the name. The views show the name cleaned (lens_cli_shown), the reader still opens the file: a
# trace cut short (summary and report name it) and one that is no trace at all (the error line names it).
mkdir "$tmp/names" "$tmp/bad"
"$lens" replay --quiet --scenario allreduce --nodes 2 --ranks-per-node 1 --iters 3 --out "$tmp/tr2" >/dev/null
files=("$tmp"/tr2/*.lens)
cp "${files[0]}" "$tmp/names/"$'ok\x1b]0;owned\x07\x1b[31m\nFORGED name\xe2\x80\xaerev.lens'
head -c 3000 "${files[1]}" >"$tmp/names/"$'cut\x1b[2J\nFORGED cut\xe2\x80\xae.lens'
printf 'not a trace at all' >"$tmp/bad/"$'bad\x1b[2J\nFORGED bad\xe2\x80\xae.lens'
for view in summary report validate job hang net "summary --json" BAD; do
  if [ "$view" = BAD ]; then
    out=$("$lens" summary "$tmp/bad" 2>&1) && { echo "FAIL: summary read a file that is no trace"; fail=1; }
    grep -qF 'bad?[2J?FORGED bad???.lens' <<<"$out" || { echo "FAIL: the error does not name the file, cleaned"; fail=1; }
  else
    # shellcheck disable=SC2086
    out=$("$lens" $view "$tmp/names" 2>&1) || true
    case $view in summary|report)
      if ! grep -qF 'cut?[2J?FORGED cut???.lens' <<<"$out"; then echo "FAIL: $view does not name the cut file"; fail=1; fi ;;
    esac
  fi
  clean_out "$view (file names)" "$out"
done
exit $fail
