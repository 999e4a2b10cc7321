"""Where the third corpus's kernels come from: public repositories of scientific code (physics, GIS, finance, speech
recognition, 3-D detection, seismic imaging, molecular dynamics, visualisation), each read at a recorded commit from
a local git copy, as the second corpus's (``corpus2/sources.py``: ``NUMBAKERN_CORPUS2_MIRRORS``, the export layout).
The kernels' code is not in this repository."""

from __future__ import annotations

from ..corpus2.sources import MIRRORS_ENV, Source, available, read  # noqa: F401 - the same readers
from ..corpus2.sources import SOURCES as _ALL

SOURCES = {
    "gquant": Source("NVIDIA/fsi-samples", "6f22a5f3aacbe46a178b265dafff7fbd8d3ce9a1", "Apache-2.0",
                     "gQuant/greenflow: GPU financial indicators and hierarchical risk parity"),
    "xrspatial": Source("makepath/xarray-spatial", "5f6238f80fceb39740f975bc35cb6d93f6255c83", "MIT",
                        "raster GIS analysis (slope, aspect, curvature, focal statistics)"),
    "datashader": Source("holoviz/datashader", "b7ac59c5ad20412edbf9b12ee9dc6ff62d563f01", "BSD-3-Clause",
                         "rasterising large data for visualisation"),
    "second": Source("traveller59/second.pytorch", "1b2b58bec1c535a06d7785043664c0fc2ee375f9", "MIT",
                     "3-D object detection from point clouds (rotated-box NMS)"),
    "pylops": Source("PyLops/pylops", "cca7184e80da3af1ec27173df7905b676799ec23", "LGPL-3.0-only",
                     "linear operators for seismic imaging (Kirchhoff, Radon, non-stationary convolution)"),
    "fbpic": Source("fbpic/fbpic", "3e9f181e6cbfdd7830060bbe541a046d80ff3c45", "BSD-3-Clause-LBNL",
                    "a particle-in-cell code for laser-plasma physics"),
    "nemo": Source("NVIDIA/NeMo", "8cfedd7203462cb251a914e700e5605444277561", "Apache-2.0",
                   "speech recognition (the RNN-T loss and SpecAugment kernels)"),
    "pygamd": Source("youliangzhu/pygamd-v1", "e44db4a3536cf990af8091825227f1a7d3deaf55", "GPL-3.0-only",
                     "GPU molecular dynamics"),
}
_ALL.update(SOURCES)  # one registry of sources for the readers and the extraction
