"""pse.cfg's fixpoints (which rules derive some text, which the empty text) against the
plain definition, iterated until nothing changes, on random grammars; the rewrite's way
around its step (2) where no rule derives the empty text."""

import random

import pytest

from pse.cfg import _non_empty, _nullable, _productive


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


@pytest.mark.parametrize("seed", range(300))
def test_rules_none_empty_are_their_own_non_empty_versions(seed):
    """Where no rule derives the empty text, `rewrite` takes each rule's alternatives (each
    once) as its non-empty version: what step (2), `_non_empty`, makes of them."""
    rng = random.Random(seed)
    rules = {name: [alt for alt in alts if alt]  # (no empty alternative: nothing nullable)
             for name, alts in random_rules(rng).items()}
    productive = _productive(rules)
    rules = {name: [alt for alt in alts if all(k == "t" or s in productive for k, s in alt)]
             for name, alts in rules.items() if name in productive}
    assert not _nullable(rules)
    assert _non_empty(rules, set()) == {name: list(dict.fromkeys(alts))
                                        for name, alts in rules.items()}
