"""Patch a copy of judge/timing.py so eager_batches_alone logs eager's lanes beside and alone."""
import sys
p = sys.argv[1]
s = open(p).read()
anchor = "    alone = {lane: (min(walls[(lane, k)]) - min(walls[(lane, k // 4)])) / (k - k // 4) for lane in (\"reference\", \"copy\")}\n"
assert anchor in s
s = s.replace(anchor, anchor + "    open('/tmp/diag.log', 'a').write(repr(dict(k=k, R=bb.reference_ms, C=bb.copy_ms, Rw=bb.reference_whole_ms, "
              "B=bb.candidate_ms, Bw=bb.candidate_whole_ms, alone=alone, Rw_alone=min(walls[('reference', k)]) / k, "
              "lows={key: [round(x, 3) for x in sorted(v)] for key, v in walls.items()})) + '\\n')\n")
open(p, "w").write(s)
