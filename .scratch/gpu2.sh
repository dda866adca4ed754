PY=/opt/torch/.venv/bin/python3
T0=$(date +%s)
{ nvidia-smi --query-gpu=uuid --format=csv,noheader; lscpu -e; } > $OUT/machine.txt 2>&1
gcc -O2 -Itests/bench tests/bench/malloc_cost.c -o /tmp/malloc_cost
for i in 1 2 3; do echo "none $(/tmp/malloc_cost)"; echo "shim $(LD_PRELOAD=build/libpinshim.so /tmp/malloc_cost)"; done > $OUT/malloc_cost.txt 2>&1
echo "malloc $(( $(date +%s)-T0 ))s" >> $OUT/machine.txt
cd tests/bench/workloads
left=$(( 570 - ($(date +%s)-T0) ))
$PY compare_builds.py --rounds 12 --budget $left --cpus 2-9 train_phases.py -- none=none empty=empty shim=../../../build/libpinshim.so \
   off=../../../build/libpinshim.so,PINSHIM_INTERCEPT=off > $OUT/cmp2.txt 2>$OUT/cmp2.err
echo "cmp rc=$? $(( $(date +%s)-T0 ))s" >> $OUT/machine.txt
