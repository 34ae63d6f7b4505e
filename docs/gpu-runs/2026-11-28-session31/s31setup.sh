# sourced from the repository root on the GPU machine: wheels, bubblewrap, the isolation it gets
. tools/gpu/carried_wheels.sh
use_carried_wheels
dpkg -i .deb/bubblewrap_*.deb > /tmp/dpkg.log 2>&1 || { dpkg -x .deb/bubblewrap_*.deb /tmp/bw && export STITCH_BWRAP=/tmp/bw/usr/bin/bwrap; }
python3 -c "from stitch_mcp.sandbox import probe_isolation as p; i = p(); print('isolation', i.level, i.mechanisms[-2:], i.warnings)"
