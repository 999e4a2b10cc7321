"""What a user reads when their kernel is wrong: an output element the kernel never wrote is reported as never
written, in the output named as the kernel names it (not as the poison value at ``arg 1``)."""

import numpy as np
from numba import cuda

import numbakern


@cuda.jit
def row_argmax_skips_last(x, out):
    r = cuda.grid(1)
    if r < x.shape[0] - 1:  # planted: the last row is never written
        best = 0
        for c in range(1, x.shape[1]):
            if x[r, c] > x[r, best]:
                best = c
        out[r] = best


def argmax_args(rand, rows=37, cols=5):
    return rand((rows, cols), np.float32), np.empty(rows, np.int64)


numbakern.declare(row_argmax_skips_last, args=argmax_args,
                  launch=lambda x, out: numbakern.launch_config(x.shape[0], 32),
                  reference=lambda x, out: np.argmax(x, axis=1))


def test_a_never_written_int64_element_is_reported_as_never_written_in_its_output(rng):
    spec = numbakern.get(f"{__name__}:row_argmax_skips_last")
    rows = 37
    case = spec.make_case({"rows": rows, "cols": 5}, rng, "uniform")
    (result,) = spec.check(case, numbakern.run_case(spec, case)).values()
    text = str(result)
    assert not result.ok and result.mismatches == 1 and result.never_written == 1
    assert text.startswith("row_argmax_skips_last: output 'out': 1 element differs, all of them never written"), text
    expected = int(np.argmax(case.args[0][rows - 1]))
    assert f"at ({rows - 1},): never written (still " in text and f"expected {expected}" in text, text
    assert "arg 1" not in text


def test_a_wrong_value_that_was_written_is_still_a_wrong_value():
    before = np.full(4, np.nan, np.float32)
    got = np.array([1.0, 2.5, np.nan, 4.0], np.float32)
    result = numbakern.compare(got, np.array([1.0, 2.0, 3.0, 4.0]), before=before, name="k: output 'y'")
    assert result.mismatches == 2 and result.never_written == 1
    text = str(result)
    assert "at (1,): got 2.5, expected 2.0" in text and "at (2,): never written (still nan" in text, text
    assert "2 elements differ, 1 of them never written" in text
