"""Build a small structure from combinators and show what it accepts, token by token.

Run: python examples/quickstart.py
"""

import pse

# key=value pairs separated by ";", where a value is a number or a quoted word
key = pse.Character([("a", "z"), ("_", "_")], max_length=12)
number = pse.Character("0123456789", max_length=6)
word = pse.Phrase('"') + pse.Character([("a", "z"), ("A", "Z")]) + pse.Phrase('"')
pair = key + pse.Phrase("=") + (number | word)
settings = pse.Loop(pair, min_count=1, separator=pse.Phrase(";") + pse.Whitespace(max_length=1))

for text in ['depth=3; name="pse"', "depth=3;", "Depth=3", 'a=1;b="x";c=22']:
    verdict = "accepted" if settings.matches(text) else "rejected"
    print(f"{text!r:26} {verdict}")

print("\nstep by step through tokens (the way a model emits them):")
stepper = settings.get_steppers()[0]
for token in ["dep", "th=", "3", ";", ' na', 'me="', "ps", 'e"']:
    deltas = stepper.consume(token)
    if not deltas:
        print(f"  {token!r:8} -> rejected")
        break
    stepper = deltas[0].stepper
    can_end = "can end here" if stepper.has_reached_accept_state() else "must go on"
    nxt = stepper.next_bytes().decode("latin-1")
    print(f"  {token!r:8} -> {stepper.consumed.decode()!r:22} {can_end:12} next byte in {nxt!r}")

print("\nany JSON value:")
json_machine = pse.Json()
for text in ['{"name":"pse","tags":["fast","exact"],"version":0.1}', '{"a":1,}']:
    print(f"  {text!r:56} {'accepted' if json_machine.matches(text) else 'rejected'}")
