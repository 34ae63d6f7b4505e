. .gpu/setup.sh
mkdir -p /tmp/logs26b
export STITCH_CACHE_DIR=/tmp/t26-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t26
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/logs26b/machine.txt
cat /proc/loadavg | tee -a /tmp/logs26b/machine.txt
timeout 400 python3 .gpu/s26diag.py 2>&1 | grep -v "^\[" | tee /tmp/logs26b/diag.log | cut -c1-900
tar czf $OUT/logs26b.tgz -C /tmp logs26b
