"""The units a learner may type, grouped into families that convert into one another.

Every unit is a factor times its family's base unit: bytes, seconds, bytes per second,
dollars, FLOP, FLOP/s, watts, watt-hours, or a plain number. Decimal prefixes follow SI
(1 GB = 10^9 bytes) and binary ones IEC 80000-13 (1 GiB = 2^30 bytes); a lowercase ``b``
after a prefix is a bit (400 Gb/s = 50 GB/s), as in network datasheets.

The table is case-sensitive first ("Gb" is a gigabit, "GB" a gigabyte). Text that only
matches when lowercased ("gb", "tflops") is read with every meaning it could have, most
likely first; the caller keeps the first one in the family it expects.
"""

from __future__ import annotations

from dataclasses import dataclass

# Family names, also used in messages ("..., which is a time").
SIZE, TIME, BANDWIDTH, MONEY = "size", "time", "bandwidth", "money"
COMPUTE, COMPUTE_RATE, POWER, ENERGY, RATIO = "compute", "compute rate", "power", "energy", "ratio"
COUNT_PREFIX = "count:"  # a counting word such as "steps" is its own family: "count:step"


@dataclass(frozen=True)
class Unit:
    """One unit: its family, its size in the family's base unit, and how it is written."""

    family: str
    factor: float
    symbol: str


_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_PREFIX_WORDS = {"": 1.0, "kilo": 1e3, "mega": 1e6, "giga": 1e9, "tera": 1e12, "peta": 1e15}
_SI_COMPUTE = {"": 1.0, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21}

# Scale words after a number: "7B params", "$1.06M", "15.6T tokens", "2k steps".
SCALES: dict[str, float] = {
    "k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "mn": 1e6, "million": 1e6,
    "B": 1e9, "bn": 1e9, "billion": 1e9, "T": 1e12, "tn": 1e12, "trillion": 1e12,
}

_SECONDS_PER_DAY = 86_400.0
# One petaflop/s-day: 10^15 FLOP/s sustained for a day (the unit of OpenAI's "AI and Compute").
_PF_DAY = 1e15 * _SECONDS_PER_DAY


def _sizes() -> list[tuple[str, Unit]]:
    """Byte and bit sizes; bytes are listed first so that "gb" reads as gigabytes."""
    out: list[tuple[str, Unit]] = []
    for prefix, f in {**_DECIMAL, **_BINARY}.items():
        out.append((f"{prefix}B", Unit(SIZE, f, f"{prefix}B")))
    for word, f in _PREFIX_WORDS.items():
        out += [(f"{word}byte", Unit(SIZE, f, f"{word}byte")),
                (f"{word}bytes", Unit(SIZE, f, f"{word}bytes"))]
    for prefix, f in _DECIMAL.items():
        if prefix:
            out.append((f"{prefix}b", Unit(SIZE, f / 8, f"{prefix}b")))
        out.append((f"{prefix}bit", Unit(SIZE, f / 8, f"{prefix}bit")))
    for word, f in _PREFIX_WORDS.items():
        out += [(f"{word}bit", Unit(SIZE, f / 8, f"{word}bit")),
                (f"{word}bits", Unit(SIZE, f / 8, f"{word}bits"))]
    return out


def _bandwidths() -> list[tuple[str, Unit]]:
    """X/s for every size X, plus the networking spellings Gbps (bits) and GBps (bytes)."""
    out = [(f"{key}/s", Unit(BANDWIDTH, unit.factor, f"{unit.symbol}/s"))
           for key, unit in _sizes()]
    for prefix, f in _DECIMAL.items():
        out.append((f"{prefix}bps", Unit(BANDWIDTH, f / 8, f"{prefix}bps")))  # bits first
    for prefix, f in _DECIMAL.items():
        if prefix:
            out.append((f"{prefix}Bps", Unit(BANDWIDTH, f, f"{prefix}Bps")))
    return out


def _times() -> list[tuple[str, Unit]]:
    spellings = {
        1e-9: ("ns", "nanosecond", "nanoseconds"),
        1e-6: ("us", "µs", "μs", "usec", "microsecond", "microseconds"),
        1e-3: ("ms", "msec", "millisecond", "milliseconds"),
        1.0: ("s", "sec", "secs", "second", "seconds"),
        60.0: ("min", "mins", "minute", "minutes"),
        3600.0: ("h", "hr", "hrs", "hour", "hours"),
        _SECONDS_PER_DAY: ("d", "day", "days"),
        7 * _SECONDS_PER_DAY: ("week", "weeks"),
    }
    return [(word, Unit(TIME, f, word)) for f, words in spellings.items() for word in words]


def _compute() -> list[tuple[str, Unit]]:
    """FLOP counts and FLOP/s rates. "FLOPs" (small s) is read as a count first and
    "FLOPS" as a rate first, but each may mean the other: both spellings are common."""
    out: list[tuple[str, Unit]] = []
    for prefix, f in _SI_COMPUTE.items():
        count, rate = Unit(COMPUTE, f, f"{prefix}FLOP"), Unit(COMPUTE_RATE, f, f"{prefix}FLOP/s")
        out += [(f"{prefix}FLOP", count), (f"{prefix}FLOPs", count),
                (f"{prefix}FLOPS", rate), (f"{prefix}FLOP/s", rate), (f"{prefix}FLOPs/s", rate),
                (f"{prefix}FLOPS", count), (f"{prefix}FLOPs", rate)]
    pf_day = Unit(COMPUTE, _PF_DAY, "PF-days")
    for word in ("PF-day", "PF-days", "pfs-day", "pfs-days", "petaflop-day", "petaflop-days",
                 "PFLOP/s-day", "PFLOP/s-days", "PFLOPS-day", "PFLOPS-days"):
        out.append((word, pf_day))
    return out


def _others() -> list[tuple[str, Unit]]:
    out: list[tuple[str, Unit]] = []
    for word in ("$", "USD", "US$", "dollar", "dollars"):
        out.append((word, Unit(MONEY, 1.0, "$")))
    for prefix, f in {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}.items():
        out.append((f"{prefix}W", Unit(POWER, f, f"{prefix}W")))
        out.append((f"{prefix}Wh", Unit(ENERGY, f, f"{prefix}Wh")))
    out += [("watt", Unit(POWER, 1.0, "W")), ("watts", Unit(POWER, 1.0, "W")),
            ("J", Unit(ENERGY, 1 / 3600, "J")), ("kJ", Unit(ENERGY, 1e3 / 3600, "kJ")),
            ("MJ", Unit(ENERGY, 1e6 / 3600, "MJ"))]
    out += [("%", Unit(RATIO, 0.01, "%")), ("percent", Unit(RATIO, 0.01, "%")),
            ("x", Unit(RATIO, 1.0, "x")), ("×", Unit(RATIO, 1.0, "x")),
            ("times", Unit(RATIO, 1.0, "x"))]
    return out


#: Units of dimensions no exercise asks about, known only so that they are refused by name
#: ("0.0024 kg" is a mass, not a learning rate) instead of read as a counting word.
OTHER_DIMENSIONS: dict[str, tuple[str, ...]] = {
    "mass": ("mg", "g", "kg", "gram", "grams", "kilogram", "kilograms", "lb", "lbs", "pound",
             "pounds", "oz", "ounce", "ounces"),
    "length": ("nm", "µm", "μm", "mm", "cm", "m", "km", "meter", "meters", "metre", "metres",
               "inch", "inches", "ft", "foot", "feet", "mile", "miles"),
    "volume": ("ml", "mL", "l", "L", "liter", "liters", "litre", "litres"),
    "temperature": ("°C", "°F", "degC", "degF", "kelvin"),
    "frequency": ("Hz", "kHz", "MHz", "GHz"),
    "pressure": ("Pa", "kPa", "bar", "psi"),
    "voltage": ("mV", "V", "kV", "volt", "volts"),
    "current": ("mA", "amp", "amps", "ampere", "amperes"),
    "angle": ("rad", "deg", "degree", "degrees", "°"),
    "amount of substance": ("mol", "mole", "moles"),
}


def _other_dimensions() -> list[tuple[str, Unit]]:
    return [(word, Unit(family, 1.0, word)) for family, words in OTHER_DIMENSIONS.items()
            for word in words]


def _build() -> tuple[dict[str, tuple[Unit, ...]], dict[str, tuple[Unit, ...]]]:
    exact: dict[str, list[Unit]] = {}
    folded: dict[str, list[Unit]] = {}
    units = _sizes() + _bandwidths() + _times() + _compute() + _others() + _other_dimensions()
    for key, unit in units:
        for table, k in ((exact, key), (folded, key.lower())):
            meanings = table.setdefault(k, [])
            if all((u.family, u.factor) != (unit.family, unit.factor) for u in meanings):
                meanings.append(unit)
    return ({k: tuple(v) for k, v in exact.items()}, {k: tuple(v) for k, v in folded.items()})


EXACT, FOLDED = _build()


def lookup(symbol: str) -> tuple[tuple[Unit, ...], bool]:
    """The meanings of ``symbol``, most likely first, and whether only case-folding matched."""
    if symbol in EXACT:
        return EXACT[symbol], False
    return FOLDED.get(symbol.lower(), ()), True


def singular(word: str) -> str:
    """Normalise a counting word: "GPUs" -> "gpu", "tokens per second" -> "token/s"."""
    text = " ".join(word.lower().replace(" per ", "/").split())
    parts = [p.strip() for p in text.split("/")]
    return "/".join(p[:-1] if len(p) > 3 and p.isalpha() and p.endswith("s") else p
                    for p in parts)


def count_unit(word: str) -> Unit:
    """The family of a counting word: "64 steps" and "64 step" are the same unit."""
    return Unit(COUNT_PREFIX + singular(word), 1.0, word)


def target_unit(symbol: str) -> Unit:
    """The unit an exercise answers in: a table unit, a plain number, or a counting word."""
    if symbol.strip() == "":
        return Unit(RATIO, 1.0, "")
    meanings, _ = lookup(symbol.strip())
    return meanings[0] if meanings else count_unit(symbol.strip())
