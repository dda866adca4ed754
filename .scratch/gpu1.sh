# call 1: the real-driver checks of this change, torch_train's digests, then train_phases side by side
PY=/opt/torch/.venv/bin/python3
T0=$(date +%s)
{ nvidia-smi --query-gpu=uuid,name,driver_version --format=csv,noheader; grep -m1 "model name" /proc/cpuinfo; nproc;
  cat /sys/kernel/mm/transparent_hugepage/enabled; } > $OUT/machine.txt 2>&1
OUT=$OUT/gpu PYTHON=$PY bash tests/gpu/run.sh > $OUT/gpu.log 2>&1; echo "gpu rc=$? $(( $(date +%s)-T0 ))s" >> $OUT/summary.txt
tail -3 $OUT/gpu.log >> $OUT/summary.txt
bash tests/conformance/run.sh --driver system --out $OUT/conf > $OUT/conf.log 2>&1; echo "conf rc=$? $(( $(date +%s)-T0 ))s" >> $OUT/summary.txt
tail -2 $OUT/conf.log >> $OUT/summary.txt
cd tests/bench/workloads
for g in "" --graph; do for v in none shim; do
  if [ $v = shim ]; then pre=../../../build/libpinshim.so; else pre=; fi
  LD_PRELOAD=$pre $PY torch_train.py $g 2>>$OUT/digest.err | $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["workload"], "'$v'", d.get("digest"), d.get("metrics"))' >> $OUT/summary.txt
done; done
echo "digests $(( $(date +%s)-T0 ))s" >> $OUT/summary.txt
LD_PRELOAD=../../../build/libpinshim.so $PY train_phases.py > $OUT/phase_shim.json 2>$OUT/phase_shim.err
echo "phase smoke $(( $(date +%s)-T0 ))s" >> $OUT/summary.txt
left=$(( 560 - ($(date +%s)-T0) ))
$PY compare_builds.py --rounds 10 --budget $left train_phases.py -- none=none empty=empty shim=../../../build/libpinshim.so \
   off=../../../build/libpinshim.so,PINSHIM_INTERCEPT=off count=../../alloc_count.c > $OUT/cmp1.txt 2>$OUT/cmp1.err
echo "cmp rc=$? $(( $(date +%s)-T0 ))s" >> $OUT/summary.txt
