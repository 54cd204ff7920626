#!/usr/bin/env bash
# A fuzzing campaign: every target in turn, one libFuzzer process at a time
# (-jobs=1), MINUTES each; the last status line of each run is appended to
# fuzz/campaign.log, then each corpus is minimized (cargo fuzz cmin).
#
#   bash fuzz/run-campaign.sh MINUTES_PER_TARGET [TARGET...]
#
# KEEP_GOING=1 runs -fork=1 -ignore_crashes=1 instead of -jobs=1 (still one
# fuzzing process): a known crash, not yet fixed, then does not end the run; every
# crash is still written to fuzz/artifacts/TARGET/.
#
# Needs cargo-fuzz (cargo install cargo-fuzz). Works on stable through
# RUSTC_BOOTSTRAP=1. Crashes land in fuzz/artifacts/TARGET/; see fuzz/README.md for
# what to do with them.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:?usage: bash fuzz/run-campaign.sh MINUTES_PER_TARGET [TARGET...]}
shift
all_targets=(vlen_interleaved zarrs_vlen zep0007 fixed transpose sharding compressors
             metadata_v3 metadata_v2 fill_value linear_json linear_csv write_roundtrip)
targets=("${@:-${all_targets[@]}}")
log=fuzz/campaign.log

# -max_len per target: chunk decoders and documents up to 16 KiB (the seeds are
# smaller), a fill value up to 256 bytes, write inputs up to 4 KiB.
max_len() {
    case "$1" in
        fill_value) echo 256 ;;
        write_roundtrip) echo 4096 ;;
        *) echo 16384 ;;
    esac
}

export RUSTC_BOOTSTRAP=1
# zarrow's writer encodes on rayon's pool: one thread, so one core per campaign.
export RAYON_NUM_THREADS=1
# Release build with debug assertions and overflow checks (as in fuzz/README.md).
build=(-O -a)

cargo fuzz build "${build[@]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== campaign $(date -u +%FT%TZ), ${minutes} min per target, $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >> "$log"
for t in "${targets[@]}"; do
    mkdir -p "fuzz/artifacts/$t" "fuzz/corpus/$t"
    before=$(ls "fuzz/artifacts/$t" | wc -l)
    # -jobs=1: libFuzzer runs the fuzzing in one child process, logging to
    # fuzz-0.log in the working directory; a crash ends the run early. -fork=1:
    # one child at a time too, restarted after each crash.
    if [ "${KEEP_GOING:-0}" = 1 ]; then
        mode=(-fork=1 -ignore_crashes=1)
    else
        mode=(-jobs=1)
    fi
    (cd "$work" && rm -f fuzz-0.log)
    status=0
    (cd "$work" && cargo fuzz run --fuzz-dir "$OLDPWD/fuzz" "${build[@]}" "$t" \
        "$OLDPWD/fuzz/corpus/$t" -- \
        "${mode[@]}" -max_total_time=$((minutes * 60)) -rss_limit_mb=4096 -timeout=60 \
        -max_len="$(max_len "$t")" -print_final_stats=1 > "$work/driver.log" 2>&1) || status=$?
    # -jobs=1 logs to fuzz-0.log; -fork=1 to the driver's output.
    [ -f "$work/fuzz-0.log" ] || cp "$work/driver.log" "$work/fuzz-0.log"
    last=$(grep -aE '^#[0-9]+:?[[:space:]]+(INITED|NEW|REDUCE|pulse|DONE|RELOAD|cov:)' "$work/fuzz-0.log" | tail -n 1 || true)
    execs=$(grep -aE '^stat::number_of_executed_units' "$work/fuzz-0.log" | awk '{print $2}' | tail -n 1 || true)
    [ -n "$execs" ] || execs=$(printf '%s' "$last" | sed -nE 's/^#([0-9]+).*/\1/p')
    after=$(ls "fuzz/artifacts/$t" | wc -l)
    corpus=$(ls "fuzz/corpus/$t" | wc -l)
    crash=$(grep -aE '^(==[0-9]+==ERROR|thread .* panicked|SUMMARY)' "$work/fuzz-0.log" | head -n 1 || true)
    printf '%s %-16s exit=%s execs=%s corpus_files=%s new_artifacts=%s | %s%s\n' \
        "$(date -u +%FT%TZ)" "$t" "$status" "${execs:-?}" "$corpus" "$((after - before))" \
        "${last:-no status line}" "${crash:+ | CRASH: $crash}" >> "$log"
    cp "$work/fuzz-0.log" "fuzz/artifacts/$t/last-run.log" 2>/dev/null || true
    tail -n 1 "$log"
done

# Keep the committed corpus small: the smallest subset with the same coverage.
for t in "${targets[@]}"; do
    RAYON_NUM_THREADS=1 cargo fuzz cmin "${build[@]}" "$t" "fuzz/corpus/$t" -- \
        -rss_limit_mb=4096 -timeout=60 -max_len="$(max_len "$t")" > "$work/cmin.log" 2>&1 \
        || { echo "cmin $t failed, see below"; tail -n 20 "$work/cmin.log"; }
    echo "$(date -u +%FT%TZ) cmin $t: $(ls "fuzz/corpus/$t" | wc -l) files, $(du -sb "fuzz/corpus/$t" | cut -f1) bytes" >> "$log"
done
