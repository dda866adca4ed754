# call A: real-driver checks of the new hooks and thread starter; hook cost per pair; step side by side
PY=/opt/torch/.venv/bin/python3
T0=$(date +%s)
S=$OUT/summary.txt
nvidia-smi --query-gpu=uuid --format=csv,noheader > $S
OUT=$OUT/gpu PYTHON=$PY bash tests/gpu/run.sh > $OUT/gpu.log 2>&1; echo "gpu rc=$? $(( $(date +%s)-T0 ))s" >> $S
tail -1 $OUT/gpu.log >> $S; grep -E "^not ok|FAIL" $OUT/gpu.log | head -5 >> $S
bash tests/conformance/run.sh --driver system --out $OUT/conf > $OUT/conf.log 2>&1; echo "conf rc=$? $(( $(date +%s)-T0 ))s" >> $S
tail -1 $OUT/conf.log >> $S
rm -rf $OUT/gpu $OUT/conf
gcc -O2 -Itests/bench tests/bench/malloc_cost.c -o /tmp/mc; gcc -O2 -shared -fPIC .scratch/minhook.c -o /tmp/libmin.so
for i in 1 2 3 4 5; do for v in none min old new; do
  case $v in none) pre=;; min) pre=/tmp/libmin.so;; old) pre=$PWD/build/old/libpinshim.so;; new) pre=$PWD/build/libpinshim.so;; esac
  echo "$v $(LD_PRELOAD=$pre PINSHIM_SUMMARY=none /tmp/mc 3000000)"; done; done > $OUT/malloc_cost.txt 2>&1
echo "malloc $(( $(date +%s)-T0 ))s" >> $S
cd tests/bench/workloads
for g in "" --graph; do for v in none shim; do
  if [ $v = shim ]; then pre=../../../build/libpinshim.so; else pre=; fi
  LD_PRELOAD=$pre $PY torch_train.py $g 2>/dev/null | $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["workload"], "'$v'", d.get("digest"), round(d["metrics"][0]["value"],3))' >> $S
done; done
echo "digests $(( $(date +%s)-T0 ))s" >> $S
left=$(( 575 - ($(date +%s)-T0) ))
$PY compare_builds.py --rounds 20 --budget $left --cpus 2-9 train_phases.py -- none=none old=../../../build/old/libpinshim.so \
   new=../../../build/libpinshim.so > $OUT/cmp3.txt 2>$OUT/cmp3.err
echo "cmp rc=$? $(( $(date +%s)-T0 ))s" >> $S
