"""Numbers the docs print, checked at the precision they are printed with: a quote agrees with a value the code
computes when it is that value rounded to the quote's digits, on any CPU. A value that lies (within float rounding)
on the edge between two printed numbers may round either way on another CPU's kernels, so either is accepted."""
from __future__ import annotations

SLACK = 1e-6          # relative: far above float32's rounding of these values, far below any printed digit


def agrees(quote: str, value: float) -> bool:
    """Whether ``quote`` (as printed: "0.81", "+0.36", "12", "1,024") is ``value`` rounded to its digits."""
    digits = quote.split(".")[1] if "." in quote else ""
    half_unit = 0.5 * 10.0 ** -len(digits)
    return abs(float(quote.replace(",", "")) - value) <= half_unit + SLACK * max(1.0, abs(value))


def assert_agrees(quote: str, value: float, what: str = "") -> None:
    assert agrees(quote, value), f"{what} the docs print {quote}, the code gives {value!r}"
