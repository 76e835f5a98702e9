"""Kubernetes resource quantities (``500m``, ``64Gi``, ``1e3``, ``4``) as exact decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(
    r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?[0-9]+))?$"
)


def parse_quantity(value) -> Decimal | None:
    """The value of a quantity, or None when it is not one (bools are never quantities)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        try:
            return Decimal(repr(value))
        except InvalidOperation:
            return None
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip() if value == value.strip() else "\x00")
    if not m:
        return None
    sign, number, suffix, exponent = m.groups()
    try:
        amount = Decimal(number)
        if exponent is not None:
            if abs(int(exponent)) > 100:
                return None
            amount = amount.scaleb(int(exponent))
        else:
            amount *= _SUFFIX[suffix or ""]
    except (InvalidOperation, ValueError):
        return None
    return -amount if sign == "-" else amount
