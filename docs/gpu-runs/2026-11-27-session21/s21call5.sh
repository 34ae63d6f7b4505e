. .gpu/setup.sh
L=/tmp/logs21e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
uptime | tee $L/uptime.txt
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t21e
SEL='test_gpu_forged_event_times or test_gpu_honest_short_kernels'
i=0
for tree in new old new old; do
  i=$((i+1))
  if [ $tree = new ]; then D=$PWD; else D=$PWD/.gpu/oldcd; fi
  export STITCH_DATA_DIR=/tmp/t21e-$i STITCH_CACHE_DIR=/tmp/t21e-cache-$tree
  (cd $D && PYTHONPATH=/tmp/site:$D timeout 150 python3 -m pytest -m gpu -v --tb=line --timeout 120 -p no:cacheprovider tests/test_adversarial.py -k "$SEL" > $L/run$i-$tree.log 2>&1)
  echo "run $i $tree: $(grep -oE '(PASSED|FAILED)' $L/run$i-$tree.log | sort | uniq -c | tr '\n' ' ') $(grep -E '^E ' $L/run$i-$tree.log | cut -c1-200 | head -2)"
  uptime
done
tar czf $OUT/logs21e.tgz -C /tmp logs21e
