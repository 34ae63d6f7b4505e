. .gpu/setup.sh
L=/tmp/logs19b; mkdir -p $L
export STITCH_DATA_DIR=/tmp/t19b-data STITCH_CACHE_DIR=/tmp/t19b-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t19b
timeout 120 python3 -m pytest -v --tb=long --timeout 100 -p no:cacheprovider tests/test_sandbox.py -k "widen or every_process_it_starts" > $L/cpuset_tests.log 2>&1
echo "cpuset tests rc $?"; grep -E "PASSED|FAILED|SKIPPED|ERROR|^E " $L/cpuset_tests.log | cut -c1-250 | tail -12
tar czf $OUT/logs19b.tgz -C /tmp logs19b
