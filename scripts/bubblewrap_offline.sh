#!/usr/bin/env bash
# bubblewrap (`bwrap`) for a machine that cannot install packages itself (the offline GPU machine): the sandbox of
# verification and of a model's compiles (translate/verify/sandbox.py) runs its children in bubblewrap's
# namespaces, and falls back to none, with a warning, where there is no bwrap.
#
#   bash scripts/bubblewrap_offline.sh download   # on a machine with apt and a network: the .deb into .offline/
#   bash scripts/bubblewrap_offline.sh unpack     # on the offline machine (with .offline/ carried there): unpack
#                                                 # it into .offline/bubblewrap/ and check that it can isolate
#   export NUMBAKERN_BWRAP=$PWD/.offline/bubblewrap/usr/bin/bwrap   # then: the sandbox uses it
#
# .offline/ is git-ignored. Exit status: 0 done (unpack: bwrap isolates children here), 1 it cannot, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.offline
case "${1:-}" in
  download)
    mkdir -p "$dir"
    (cd "$dir" && rm -f bubblewrap_*.deb && apt-get download bubblewrap)
    ls "$dir"/bubblewrap_*.deb
    ;;
  unpack)
    deb=$(ls "$dir"/bubblewrap_*.deb 2>/dev/null | head -1)
    if [ -z "$deb" ]; then
      echo "bubblewrap_offline.sh: no $dir/bubblewrap_*.deb: run 'download' where apt has a network" >&2
      exit 1
    fi
    rm -rf "$dir/bubblewrap" && dpkg -x "$deb" "$dir/bubblewrap"
    export NUMBAKERN_BWRAP="$PWD/$dir/bubblewrap/usr/bin/bwrap"
    python3 -c "
from translate.verify import sandbox
found = sandbox.probe_bwrap()
print('bwrap isolates children here' if found.program else f'bwrap cannot isolate children here: {found.reason}')
raise SystemExit(0 if found.program else 1)"
    echo "export NUMBAKERN_BWRAP=$NUMBAKERN_BWRAP"
    ;;
  *)
    echo "usage: bash scripts/bubblewrap_offline.sh download|unpack" >&2
    exit 2
    ;;
esac
