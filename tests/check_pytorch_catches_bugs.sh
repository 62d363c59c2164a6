#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# The PyTorch comparison must be able to fail. Plant two classic bugs in a
# copy of the source — RoPE pairs interleaved (i, i+1) instead of rotate_half
# (i, i+half), and the q/k/v bias dropped — build each mutant from the
# existing objects (tools/build_mutant.sh) and check that tools/compare_torch.py rejects it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/mutants

mutant() {  # name, source file, sed expression
    local name=$1 src=$2 expr=$3
    bash tools/build_mutant.sh "$name" "$src" "$expr" >/dev/null
    if /usr/bin/python3 tools/compare_torch.py --quick --binary $dir/run-$name > $dir/$name.log 2>&1; then
        echo "mutant $name PASSED the comparison: the check is blind to it"; cat $dir/$name.log; exit 1
    fi
    echo "mutant $name caught:"; grep -m2 FAIL $dir/$name.log
}
# rotate_half pairs v[i] with v[i+half]; the interleaved layout pairs v[2i] with v[2i+1]
mutant rope_interleaved kernels.cpp 's/float a = v\[i\], b = v\[i + half\];/float a = v[2 * i], b = v[2 * i + 1];/; s/v\[i\] = a \* c - b \* s;/v[2 * i] = a * c - b * s;/; s/v\[i + half\] = b \* c + a \* s;/v[2 * i + 1] = b * c + a * s;/'
mutant no_qkv_bias net.cpp 's/L\.b\([qkv]\)\.data()/nullptr/g'
