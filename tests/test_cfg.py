"""pse.cfg's fixpoints (which rules derive some text, which the empty text) against the
plain definition, iterated until nothing changes, on random grammars."""

import random

import pytest

from pse.cfg import _nullable, _productive


def random_rules(rng: random.Random) -> dict:
    names = [f"r{k}" for k in range(rng.randint(1, 8))]
    rules = {}
    for name in names:
        rules[name] = [tuple(rng.choice([("t", "X"), ("n", rng.choice(names + ["undefined"]))])
                             for _ in range(rng.randint(0, 3)))
                       for _ in range(rng.randint(0, 3))]
    return rules


def iterated(rules: dict, holds) -> set:
    done: set = set()
    changed = True
    while changed:
        changed = False
        for name, alts in rules.items():
            if name not in done and any(holds(alt, done) for alt in alts):
                done.add(name)
                changed = True
    return done


@pytest.mark.parametrize("seed", range(200))
def test_fixpoints_match_the_definition(seed):
    rules = random_rules(random.Random(seed))
    assert _productive(rules) == iterated(
        rules, lambda alt, done: all(k == "t" or s in done for k, s in alt))
    assert _nullable(rules) == iterated(
        rules, lambda alt, done: all(k == "n" and s in done for k, s in alt))
