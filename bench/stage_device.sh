#!/usr/bin/env bash
# Stages a release build for the GPU machine (another distribution, no
# Debian packages): the stripped CLI, the collector, the Python bootstrap and
# the shared libraries the CLI needs that such a machine may lack, in DIR,
# plus DIR/scalescope, a wrapper that runs the CLI on those libraries without
# putting them on the job's library path.
#   bench/stage_device.sh [BUILD] [DIR]      (defaults: build .devcarry)
# Then on the GPU machine, from the repository root: .devcarry/scalescope analyze ...
set -euo pipefail
build="${1:-build}"
dir="${2:-.devcarry}"
for f in "$build/cli/scalescope" "$build/collect/libscalescope-collector.so"; do
  [ -f "$f" ] || { echo "stage_device.sh: $f is missing: build the release configuration first" >&2; exit 1; }
done
rm -rf "$dir/bin" "$dir/lib" "$dir/python" "$dir/scalescope"
mkdir -p "$dir/bin" "$dir/lib"
strip -o "$dir/bin/scalescope" "$build/cli/scalescope"
strip -o "$dir/bin/libscalescope-collector.so" "$build/collect/libscalescope-collector.so"
[ -f "$build/capi/libscalescope.so" ] && strip -o "$dir/bin/libscalescope.so" "$build/capi/libscalescope.so"
# The C and C++ runtimes of the GPU machine are newer than Debian 12's and
# stay; everything else the CLI links (and libdw's chain, for naming native
# frames) travels.
libs() { ldd "$@" | awk '$3 ~ /^\// {print $3}' | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil)\.so'; }
dw="$(ldconfig -p | awk '/libdw\.so\.1 / {print $NF; exit}')"
for lib in $(libs "$build/cli/scalescope" ${dw:+"$dw"}) ${dw:+"$dw"}; do cp -L "$lib" "$dir/lib/"; done
bootstrap="$(dirname "$0")/../collect/python"
if [ -d "$bootstrap" ]; then
  mkdir -p "$dir/python"
  cp -r "$bootstrap/sitecustomize.py" "$bootstrap/scalescope_bootstrap" "$dir/python/"
  find "$dir/python" -name __pycache__ -prune -exec rm -rf {} +
fi
cat > "$dir/scalescope" <<'WRAP'
#!/usr/bin/env bash
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SCALESCOPE_COLLECTOR="$here/bin/libscalescope-collector.so"
[ -d "$here/python" ] && export SCALESCOPE_PYTHON_BOOTSTRAP="$here/python"
exec /lib64/ld-linux-x86-64.so.2 --library-path "$here/lib" "$here/bin/scalescope" "$@"
WRAP
chmod +x "$dir/scalescope"
du -sh "$dir" | awk '{print "stage_device.sh: " $1 " in '"$dir"'"}'
