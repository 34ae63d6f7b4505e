# Sourced by the GPU runners (from the repository root): stitch-mcp's Python dependencies on a GPU
# machine that lacks them. The machine has torch but no mcp/pydantic; ../shared/device/wheelhouse.sh
# builds .whl/ here and the run carries it.
#   use_carried_wheels   -> PYTHONPATH holds the repository (and /tmp/site when the wheels were needed)
use_carried_wheels() {
  local root=$PWD
  if python3 -c 'import mcp, pydantic, pydantic_settings, rich' 2>/dev/null; then
    export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
  elif ls .whl/*.whl >/dev/null 2>&1; then
    echo "installing the carried wheels into /tmp/site" >&2
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      || { echo "wheel install failed" >&2; exit 2; }
    export PYTHONPATH=/tmp/site:$root
  else
    echo "mcp/pydantic missing and no .whl/ here: run ../shared/device/wheelhouse.sh and carry .whl" >&2
    exit 2
  fi
}
