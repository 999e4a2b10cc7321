"""The helper process of ``translate.worker``: reads requests as JSON lines, runs them with numba's real CUDA target
and writes one JSON answer per request."""

from __future__ import annotations

import json
import os
import sys

from .. import check, pipeline
from ..request import TranslateOptions
from . import encode_error


def serve() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        for p in req.get("path", []):
            if p not in sys.path:
                sys.path.append(p)
        try:
            kwargs = req["kwargs"]
            if req["op"] == "translate":
                opts = TranslateOptions(**kwargs.pop("opts"))
                result = pipeline.translate(**kwargs, opts=opts).to_json()
            elif req["op"] == "check":
                from numbakern import project as projects  # after numba's CUDA target was chosen (above)

                # relative file targets in a manifest are relative to the folder translate ran in: the project's
                before = os.getcwd()
                os.chdir(kwargs["project_dir"])
                try:
                    result = check.check(kwargs["out_dir"], kwargs["expected"], projects.find("."))
                finally:
                    os.chdir(before)
            else:
                raise ValueError(f"unknown op {req['op']}")
            reply = {"result": result}
        except Exception as e:  # noqa: BLE001 - every error goes back to the caller
            reply = {"error": encode_error(e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
