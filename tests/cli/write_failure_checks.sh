#!/usr/bin/env bash
# The offline commands on a full or nearly full disk (small_disk.sh: a private 1 MiB tmpfs holding the outputs, inputs
# elsewhere): for each amount of free space, either the command exits 0 with every output under its final name, or it
# exits non-zero with "No space left on device" and an output's (or chunk file's) name in its error, leaving no output
# under its final name and no temporary (nothing but the restart state a command keeps by design: finished chunk
# files). Among the sizes, one must fail after some outputs were written (the set is then removed: "no output kept"),
# and the largest must succeed. Inputs are tiny random images (nifti_stdlib.py); the commands run on PoCL.
# The "interrupt" check sends SIGINT, SIGTERM and SIGHUP to glm while it writes: it ends by the signal, leaving nothing.
#   usage: write_failure_checks.sh RTFMRI WORK_DIR CHECK (glm randomise chunks connectome register normalize mc
#          bedpost interrupt)
set -uo pipefail
RTFMRI=$1
WORK=$2
WHAT=$3
HERE=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"
# shellcheck source=small_disk.sh
source "$HERE/small_disk.sh"
[[ $WHAT == interrupt ]] || require_small_disk
PY=/usr/bin/python3
rm -rf "$WORK" && mkdir -p "$WORK/in" "$WORK/out"
IN=$WORK/in
OUT=$WORK/out  # the tmpfs, in the command's private mount namespace only
image() { "$PY" "$HERE/nifti_stdlib.py" write "$@" >/dev/null || { echo "FAIL: making $1"; exit 1; }; }

# disk_run FREE CMD...: CMD on the tmpfs with FREE bytes free; its output, then "@rc STATUS" and "@left PATH" for
# everything left in $OUT (the filler excepted).
disk_run() {
  local free=$1
  shift
  on_small_disk "$OUT" "$free" bash -c \
    'out=$1; shift; "$@" 2>&1; echo "@rc $?"; find "$out" -mindepth 1 ! -name .filler -printf "@left %P\n"' \
    _ "$OUT" "$@"
}

# sweep NAME "OUTPUTS" NAMED KEEP SIZES -- CMD...: the rule above for each free size in SIZES (bytes, smallest
# first). OUTPUTS: the files of a success (relative to $OUT); NAMED: a regex the error line must match (the file that
# failed); KEEP: a regex of what a failure may leave (restart state; empty: nothing).
sweep() {
  local name=$1 outputs=$2 named=$3 keep=$4 sizes=()
  shift 4
  while [[ $1 != -- ]]; do
    sizes+=("$1")
    shift
  done
  shift
  local want set_removed=0 failed=0 last_ok=0
  want=$(tr ' ' '\n' <<<"$outputs" | sed '/^$/d' | sort | tr '\n' ' ')
  for free in "${sizes[@]}"; do
    local out rc left kept error
    out=$(disk_run "$free" "$@")
    rc=$(sed -n 's/^@rc //p' <<<"$out")
    left=$(sed -n 's/^@left //p' <<<"$out" | sort | tr '\n' ' ')
    kept=$(sed -n 's/^@left //p' <<<"$out" | { if [[ -n $keep ]]; then grep -Ev "^($keep)$"; else cat; fi; } | tr '\n' ' ')
    error=$(grep 'rtfmri: error:' <<<"$out")
    last_ok=0
    if [[ $rc == 0 ]]; then
      if [[ "$left" == "$want" ]]; then
        pass "$name, $free bytes free: exit 0, every output"
        last_ok=1
      else
        fail "$name, $free bytes free: exit 0 but left [$left], want [$want]: $out"
      fi
      continue
    fi
    failed=1
    if [[ -z $rc || $rc -ge 126 ]]; then
      fail "$name, $free bytes free: exit status '$rc' (a crash or the namespace): $out"
    elif [[ -n "${kept// /}" ]]; then
      fail "$name, $free bytes free: exit $rc but left [$kept]: $out"
    elif [[ ! "$error" =~ "No space left on device" ]]; then
      fail "$name, $free bytes free: exit $rc without the system's reason: $out"
    elif [[ ! "$error" =~ $named ]]; then
      fail "$name, $free bytes free: the error names no file matching $named: $out"
    else
      local removed
      removed=$(grep -o 'removed the [0-9]* of [0-9]*' <<<"$out")
      pass "$name, $free bytes free: exit $rc naming $(grep -oE "$named" <<<"$error" | head -1), left [${left% }]${removed:+, $removed}"
    fi
    if grep -qE 'no output kept(: removed the [1-9][0-9]* of|; the finished blocks)' <<<"$out"; then set_removed=1; fi
  done
  if [[ $failed == 1 ]]; then pass "$name: a size failed"; else fail "$name: no size failed (make the sizes smaller)"; fi
  if [[ $last_ok == 1 ]]; then pass "$name: the largest size succeeded"; else fail "$name: the largest size failed"; fi
  if [[ $set_removed == 1 || $name == *chunks ]]; then
    pass "$name: a failure after some outputs were written removed them"
  else
    fail "$name: no size failed after some outputs were written (choose sizes between)"
  fi
}

case $WHAT in
  glm)
    image "$IN/bold.nii" --dims 6 5 4 24 --tr 2 --float
    printf 'onset\tduration\ttrial_type\n4\t8\ta\n20\t8\tb\n36\t8\ta\n' >"$IN/events.tsv"
    files="g_design.tsv g_beta.nii.gz g_sigma2.nii.gz g_contrast-aMinusb_stat-effect.nii.gz"
    files+=" g_contrast-aMinusb_stat-t.nii.gz g_contrast-ab_stat-F.nii.gz g_glm.json"
    sweep glm "$files" 'g_[a-zA-Z0-9_-]+\.(nii\.gz|tsv|json)' '' 0 8192 20480 40960 524288 -- \
      "$RTFMRI" glm "$IN/bold.nii" --events "$IN/events.tsv" --contrast 'a-b=a-b' --contrast 'ab=a;b' --no-mask \
      --out "$OUT/g"
    # AR(1) noise with a permutation test, and the Bayesian GLM (its own writer, cli/glm_bayes.cpp).
    sweep "glm --noise ar1" "$files g_ar.nii.gz g_mask.nii.gz g_contrast-aMinusb_vox_corrp.nii.gz g_contrast-aMinusb_null_vox.txt
      g_contrast-ab_vox_corrp.nii.gz g_contrast-ab_null_vox.txt" 'g_[a-zA-Z0-9_-]+\.(nii\.gz|tsv|json|txt)' '' \
      0 20480 40960 524288 -- \
      "$RTFMRI" glm "$IN/bold.nii" --events "$IN/events.tsv" --contrast 'a-b=a-b' --contrast 'ab=a;b' --no-mask \
      --noise ar1 --permutations 8 --out "$OUT/g"
    sweep "glm --bayes" "g_design.tsv g_contrast-aMinusb_stat-postmean.nii.gz g_contrast-aMinusb_stat-postsd.nii.gz
      g_contrast-aMinusb_stat-ppm.nii.gz g_sigma2_postmean.nii.gz g_ar_postmean.nii.gz g_glm.json" \
      'g_[a-zA-Z0-9_-]+\.(nii\.gz|tsv|json)|g_chunks/chunk-[0-9]+\.bin' 'g_chunks|g_chunks/chunk-[0-9]+\.bin' \
      0 12288 24576 524288 -- \
      "$RTFMRI" glm "$IN/bold.nii" --events "$IN/events.tsv" --contrast 'a-b=a-b' --no-mask --bayes --draws 32 \
      --burn-in 8 --chains 1 --out "$OUT/g"
    ;;
  randomise | chunks)
    image "$IN/data.nii" --dims 5 4 3 12 --float
    if [[ $WHAT == chunks ]]; then
      # The chunk files (3 of 512, 512 and 76 rearrangements, a page each) on a disk full from the start or after the
      # first: the one that fails is named and its temporary goes; the finished ones stay for a restart.
      sweep "randomise chunks" "r_tstat1.nii.gz r_vox_p_tstat1.nii.gz r_vox_corrp_tstat1.nii.gz r_vox_null_tstat1.txt
        r_randomise.json" 'r_chunks/[a-z0-9]+/chunk-[0-9]+\.bin\.partial' 'r_chunks|r_chunks/tstat1|r_chunks/tstat1/chunk-000000\.bin' \
        0 4096 524288 -- \
        "$RTFMRI" randomise -i "$IN/data.nii" -o "$OUT/r" -1 -x -n 1100
    else
      sweep randomise "r_tstat1.nii.gz r_vox_p_tstat1.nii.gz r_vox_corrp_tstat1.nii.gz r_vox_null_tstat1.txt
        r_tfce_tstat1.nii.gz r_tfce_corrp_tstat1.nii.gz r_tfce_null_tstat1.txt r_randomise.json" \
        'r_[a-z_0-9]+\.(nii\.gz|txt|json)' 'r_chunks(/[a-z0-9]+(/chunk-[0-9]+\.bin)?)?' \
        12288 20480 32768 524288 -- \
        "$RTFMRI" randomise -i "$IN/data.nii" -o "$OUT/r" -1 -x -T -n 64
    fi
    ;;
  connectome)
    image "$IN/bold.nii" --dims 5 4 3 20 --float
    sweep connectome "c_edges.npz c_nodes.npz c_degree.nii.gz c_strength.nii.gz c_connectome.json" \
      'c_[a-z]+\.(npz|nii\.gz|json)' '' 0 8192 16384 524288 -- \
      "$RTFMRI" connectome "$IN/bold.nii" --threshold 0.2 --chunk-dir none --out "$OUT/c"
    ;;
  register)
    image "$IN/fixed.nii" --dims 20 18 16 1 --float --seed 3
    sweep register "x_affine.txt x_warped.nii.gz x_register.json" 'x_[a-z]+\.(txt|nii\.gz|json)' '' \
      0 4096 28672 524288 -- \
      "$RTFMRI" register "$IN/fixed.nii" "$IN/fixed.nii" --dof 6 --levels 4:0 --max-iterations 3 --out "$OUT/x"
    ;;
  normalize)
    image "$IN/t1.nii" --dims 20 18 16 1 --float --seed 4
    image "$IN/template.nii" --dims 20 18 16 1 --float --seed 5
    files="n_affine.txt n_warped.nii.gz n_warp.nii.gz n_inverse_warp.nii.gz n_normalize.json"
    sweep normalize "$files" 'n_[a-z_]+\.(txt|nii\.gz|json)' '' 0 8192 32768 524288 -- \
      "$RTFMRI" normalize "$IN/t1.nii" --template "$IN/template.nii" --affine-levels 4:0 --levels 8:2 --out "$OUT/n"
    ;;
  mc)
    image "$IN/bold.nii" --dims 8 7 6 4 --float
    sweep mc "m.nii.gz m.par m.1D m_fd.tsv" 'm(\.nii\.gz|\.par|\.1D|_fd\.tsv)' '' 0 8192 524288 -- \
      "$RTFMRI" mc "$IN/bold.nii" --out "$OUT/m"
    ;;
  bedpost)
    mkdir -p "$IN/dwi"
    image "$IN/dwi/data.nii.gz" --dims 4 3 2 13 --float
    image "$IN/dwi/nodif_brain_mask.nii.gz" --dims 4 3 2 1
    "$PY" - "$IN/dwi" <<'EOF'
import math, sys
d = sys.argv[1]
vecs = [(0.0, 0.0, 0.0)] + [(math.cos(k * 0.5) * math.sin(0.3 + k * 0.2), math.sin(k * 0.5) * math.sin(0.3 + k * 0.2),
                              math.cos(0.3 + k * 0.2)) for k in range(12)]
open(d + "/bvals", "w").write(" ".join("0" if k == 0 else "1000" for k in range(13)) + "\n")
open(d + "/bvecs", "w").write("\n".join(" ".join(f"{v[a]:.6f}" for v in vecs) for a in range(3)) + "\n")
EOF
    # Restart state kept on a failure: OUT.partial with its finished blocks (chunks/), nothing else.
    files="b b/bvals b/bvecs b/bedpost.json b/nodif_brain_mask.nii.gz"
    for f in dyads1 dyads1_dispersion mean_dsamples mean_S0samples mean_f1samples mean_fsumsamples mean_ph1samples \
      mean_th1samples merged_f1samples merged_ph1samples merged_th1samples; do files+=" b/$f.nii.gz"; done
    sweep bedpost "$files" \
      'b\.partial/[a-zA-Z0-9_]+(\.nii\.gz|\.json)?|b\.partial/chunks/chunk-[0-9]+\.bin' \
      'b\.partial|b\.partial/chunks|b\.partial/chunks/chunk-[0-9]+\.bin' 0 16384 524288 -- \
      "$RTFMRI" bedpost "$IN/dwi" -n 1 -b 20 -j 20 -s 10 --out "$OUT/b"
    ;;
  interrupt)
    # Ctrl-C (SIGINT), SIGTERM and SIGHUP while glm writes (its first files in the hidden folder, the permutation test
    # running): the command ends by that signal and leaves nothing. Python runs it in the foreground, so that SIGINT is
    # not ignored as it is for a shell's background job; paced by the hidden folder's first file (120 s hang guard).
    image "$IN/bold.nii" --dims 6 5 4 24 --tr 2 --float
    printf 'onset\tduration\ttrial_type\n4\t8\ta\n20\t8\tb\n36\t8\ta\n' >"$IN/events.tsv"
    for sig in INT TERM HUP; do
      rm -rf "${OUT:?}"/* "$OUT"/.[!.]*
      result=$("$PY" - "$sig" "$OUT" "$RTFMRI" glm "$IN/bold.nii" --events "$IN/events.tsv" --contrast 'a-b=a-b' \
        --no-mask --noise ar1 --permutations 10000000 --out "$OUT/g" <<'EOF'
import glob, os, signal, subprocess, sys, time
sig, out, cmd = getattr(signal, "SIG" + sys.argv[1]), sys.argv[2], sys.argv[3:]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 120
while not glob.glob(out + "/.rtfmri-partial-*/g_design.tsv") and p.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
p.send_signal(sig)
try:
    rc = p.wait(120)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
left = sorted(os.path.relpath(os.path.join(d, f), out) for d, ds, fs in os.walk(out) for f in ds + fs)
print(f"rc={rc} left=[{' '.join(left)}]")
EOF
      )
      if [[ "$result" == "rc=-$("$PY" -c "import signal; print(int(signal.SIG$sig))") left=[]" ]]; then
        pass "SIG$sig while glm writes: ended by the signal, nothing left"
      else
        fail "SIG$sig while glm writes: $result"
      fi
    done
    ;;
  *)
    echo "unknown check $WHAT"
    exit 2
    ;;
esac
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
