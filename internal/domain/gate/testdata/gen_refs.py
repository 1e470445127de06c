#!/usr/bin/env python3
"""Writes fisher.json and bh.json, the reference values the gate package's
tests check FisherExact and BenjaminiHochberg against.

It shares no code with the Go implementation and uses another method:
Fisher's test is summed over the exact hypergeometric distribution in
rational arithmetic (math.comb and fractions.Fraction), not in logarithms;
Benjamini-Hochberg q-values come straight from the definition
q_(i) = min_{j >= i} min(1, m p_(j) / j), an O(m^2) minimum, not a running
minimum. Only the standard library is used (scipy is not needed).

Run from the repository root:  python3 gate/testdata/gen_refs.py
"""

import json
import os
from fractions import Fraction
from math import comb

HERE = os.path.dirname(os.path.abspath(__file__))

# R's fisher.test (and scipy's) count as "at least as extreme" every table
# whose probability is at most the observed one times 1 + 1e-7, so that
# tables of equal probability are not lost to rounding. In exact arithmetic
# the tolerance changes nothing unless two probabilities differ by less
# than that; it is kept so the reference means exactly what Go computes.
REL_ERR = Fraction(10_000_001, 10_000_000)


def fisher(a, b, c, d):
    """Exact p-values of the 2x2 table [[a, b], [c, d]] as Fractions:
    (two-sided, less, greater), where less = P(X <= a) and greater =
    P(X >= a) for X hypergeometric with the table's margins."""
    r1, r2, c1 = a + b, c + d, a + c
    n = r1 + r2
    if n == 0:
        return Fraction(1), Fraction(1), Fraction(1)
    lo, hi = max(0, c1 - r2), min(r1, c1)
    total = comb(n, c1)
    pmf = {x: Fraction(comb(r1, x) * comb(r2, c1 - x), total) for x in range(lo, hi + 1)}
    assert sum(pmf.values()) == 1
    obs = pmf[a]
    less = sum(p for x, p in pmf.items() if x <= a)
    greater = sum(p for x, p in pmf.items() if x >= a)
    two = sum(p for p in pmf.values() if p <= obs * REL_ERR)
    return min(two, Fraction(1)), less, greater


def bh(ps):
    """Benjamini-Hochberg q-values, in the input's order, from the
    definition (ties keep their input order, which does not change q)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    ranked = [Fraction(ps[i]) for i in order]
    q_sorted = []
    for i in range(m):
        q_sorted.append(min(min(Fraction(1), m * ranked[j] / (j + 1)) for j in range(i, m)))
    q = [None] * m
    for rank, i in enumerate(order):
        q[i] = q_sorted[rank]
    return q


def lcg(seed):
    """A tiny deterministic generator, so the tables do not depend on
    Python's random module across versions."""
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        yield state >> 33


def fnum(x):
    return float(x)


def fisher_cases():
    cases = [
        # Fisher's lady tasting tea (Fisher 1935; R's ?fisher.test example
        # TeaTasting): published two-sided p = 0.4857 and, with
        # alternative = "greater", p = 0.2429.
        ([3, 1, 1, 3], "Fisher (1935) tea tasting; R ?fisher.test TeaTasting",
         {"twoSided": 0.4857142857, "greater": 0.2428571429}),
        # Convictions of like-sex twins (Fisher 1962; R's ?fisher.test
        # example Convictions): published alternative = "less" p = 0.0004652.
        ([2, 10, 15, 3], "Fisher (1962) Convictions; R ?fisher.test, alternative = \"less\"",
         {"less": 0.0004652}),
        # Gate-shaped tables: [[baseline passes, fails], [candidate passes, fails]].
        ([1, 0, 0, 1], "one trial, broke", None),
        ([2, 0, 0, 2], "two trials, broke", None),
        ([3, 0, 0, 3], "three trials, broke: greater = 1/20 exactly", None),
        ([5, 0, 0, 5], "five trials, broke", None),
        ([5, 0, 2, 3], "five trials, three fewer passes", None),
        ([10, 0, 3, 7], "ten trials", None),
        ([10, 0, 9, 1], "ten trials, one flake", None),
        ([4, 1, 4, 1], "no change", None),
        ([0, 5, 5, 0], "fixed", None),
        ([0, 0, 0, 0], "empty table", None),
        ([0, 3, 0, 3], "no passes either side", None),
        ([3, 0, 3, 0], "all pass both sides", None),
        ([100, 0, 90, 10], "hundred trials", None),
        ([60, 40, 45, 55], "large, moderate effect", None),
        ([7, 3, 3, 7], "symmetric", None),
        ([1, 9, 11, 3], "unbalanced margins", None),
    ]
    gen = lcg(20240607)
    for _ in range(40):
        a, b, c, d = (next(gen) % 31 for _ in range(4))
        cases.append(([a, b, c, d], "pseudo-random (LCG seed 20240607)", None))
    out = []
    for table, source, published in cases:
        two, less, greater = fisher(*table)
        entry = {
            "table": table,
            "source": source,
            "twoSided": fnum(two),
            "less": fnum(less),
            "greater": fnum(greater),
            "exact": {"twoSided": str(two), "less": str(less), "greater": str(greater)},
        }
        if published:
            entry["published"] = published
        out.append(entry)
    return out


def bh_cases():
    cases = [
        # Benjamini & Hochberg (1995), section 4: the 15 p-values of a study
        # of myocardial infarction treatments; at 0.05 the procedure rejects
        # the first four ("rejected": the published count). The q-values
        # are what R's p.adjust(p, method = "BH") defines.
        ([0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
          0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000],
         "Benjamini & Hochberg (1995) section 4; R p.adjust(method = \"BH\")",
         {"alpha": 0.05, "rejected": 4}),
        ([0.04, 0.01, 0.03, 0.02], "unsorted input; every q = 0.04", None),
        ([0.5], "single test: q = p", None),
        ([0.01, 0.01, 0.9, 0.01], "ties", None),
        ([1.0, 1.0, 1.0], "all ones", None),
        ([0.0, 0.2, 0.9], "a zero", None),
        ([0.9, 0.8, 0.02], "cap at one is not hit; monotone from the top", None),
    ]
    gen = lcg(7)
    for size in (5, 12, 30):
        ps = [(next(gen) % 1000_000) / 1000_000 for _ in range(size)]
        cases.append((ps, "pseudo-random (LCG seed 7), %d values" % size, None))
    # The one-sided Fisher p-values of a gate's per-case tests.
    tables = [(3, 0, 0, 3), (3, 0, 1, 2), (3, 0, 3, 0), (2, 1, 0, 3), (3, 0, 2, 1), (1, 2, 1, 2)]
    cases.append(([fnum(fisher(*t)[2]) for t in tables], "one-sided Fisher p-values of gate tables", None))
    out = []
    for ps, source, published in cases:
        q = bh(ps)
        entry = {"p": ps, "source": source, "q": [fnum(x) for x in q]}
        if published:
            entry["published"] = published
        out.append(entry)
    return out


def main():
    with open(os.path.join(HERE, "fisher.json"), "w") as f:
        json.dump(fisher_cases(), f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "bh.json"), "w") as f:
        json.dump(bh_cases(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
