"""Extraction tasks for bench/end_to_end.py: a short text, a JSON Schema of what to pull out of
it, and the answer a careful reader gives. Written for this benchmark.

Each schema is of the size extraction prompts use (3 to 6 properties: strings, integers,
numbers, enums, booleans, dates, arrays, a nested object), every property required, no
others allowed. `expected` holds the answer for each property; `score` counts the properties a
value gets right (strings compared without case and surrounding blanks, numbers by value,
arrays as sets of such strings).
"""

from __future__ import annotations

from typing import Any


def _schema(properties: dict[str, Any]) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


STR = {"type": "string", "maxLength": 60}
INT = {"type": "integer"}
NUM = {"type": "number"}
DATE = {"type": "string", "format": "date"}
BOOL = {"type": "boolean"}


def _enum(*values: str) -> dict:
    return {"enum": list(values)}


def _strings(most: int = 5) -> dict:
    return {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": most}


TASKS: list[dict[str, Any]] = [
    {"name": "contact",
     "text": "Hi, I'm Maria Gonzalez, a nurse at Saint Luke's Hospital. You can reach me at "
             "maria.gonzalez@stluke.org.",
     "schema": _schema({"name": STR, "job": STR, "email": STR}),
     "expected": {"name": "Maria Gonzalez", "job": "nurse",
                  "email": "maria.gonzalez@stluke.org"}},
    {"name": "invoice",
     "text": "Invoice 4471 from Bright Paints Ltd, dated 2024-03-15, total due 1250.50 EUR.",
     "schema": _schema({"invoice_number": INT, "vendor": STR, "date": DATE, "total": NUM,
                        "currency": _enum("EUR", "USD", "GBP")}),
     "expected": {"invoice_number": 4471, "vendor": "Bright Paints Ltd", "date": "2024-03-15",
                  "total": 1250.5, "currency": "EUR"}},
    {"name": "event",
     "text": "The annual chess tournament takes place in Oslo on 2025-06-21 and is free "
             "to enter.",
     "schema": _schema({"event": STR, "city": STR, "date": DATE, "free": BOOL}),
     "expected": {"event": "chess tournament", "city": "Oslo", "date": "2025-06-21",
                  "free": True}},
    {"name": "product",
     "text": "The Zephyr X2 headphones cost 89 dollars, come in black, white and blue, and "
             "are in stock.",
     "schema": _schema({"product": STR, "price": NUM, "colors": _strings(), "in_stock": BOOL}),
     "expected": {"product": "Zephyr X2", "price": 89, "colors": ["black", "white", "blue"],
                  "in_stock": True}},
    {"name": "flight",
     "text": "Flight LH 454 leaves Frankfurt at 13:40 and lands in San Francisco at 16:05.",
     "schema": _schema({"flight": STR, "origin": STR, "destination": STR,
                        "departure": STR}),
     "expected": {"flight": "LH 454", "origin": "Frankfurt", "destination": "San Francisco",
                  "departure": "13:40"}},
    {"name": "recipe",
     "text": "This pancake recipe serves 4 people and takes 20 minutes. You need flour, milk "
             "and eggs.",
     "schema": _schema({"dish": STR, "servings": INT, "minutes": INT,
                        "ingredients": _strings()}),
     "expected": {"dish": "pancake", "servings": 4, "minutes": 20,
                  "ingredients": ["flour", "milk", "eggs"]}},
    {"name": "job",
     "text": "Acme Robotics is hiring a senior software engineer in Berlin, full-time, with a "
             "salary of 85000 euros a year.",
     "schema": _schema({"company": STR, "title": STR, "city": STR,
                        "type": _enum("full-time", "part-time", "contract"), "salary": INT}),
     "expected": {"company": "Acme Robotics", "title": "senior software engineer",
                  "city": "Berlin", "type": "full-time", "salary": 85000}},
    {"name": "weather",
     "text": "Tomorrow in Lisbon: sunny, a high of 27 degrees Celsius, and no rain expected.",
     "schema": _schema({"city": STR, "sky": _enum("sunny", "cloudy", "rainy", "snowy"),
                        "high_celsius": INT, "rain": BOOL}),
     "expected": {"city": "Lisbon", "sky": "sunny", "high_celsius": 27, "rain": False}},
    {"name": "movie",
     "text": "Inception, directed by Christopher Nolan, came out in 2010 and runs 148 "
             "minutes.",
     "schema": _schema({"title": STR, "director": STR, "year": INT, "minutes": INT}),
     "expected": {"title": "Inception", "director": "Christopher Nolan", "year": 2010,
                  "minutes": 148}},
    {"name": "book",
     "text": "'The Left Hand of Darkness' is a science fiction novel by Ursula K. Le Guin, "
             "published in 1969.",
     "schema": _schema({"title": STR, "author": STR, "year": INT,
                        "genre": _enum("science fiction", "fantasy", "mystery", "romance")}),
     "expected": {"title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin",
                  "year": 1969, "genre": "science fiction"}},
    {"name": "apartment",
     "text": "For rent: a 3-room apartment of 75 square meters in Vienna, 1400 euros a month, "
             "pets allowed.",
     "schema": _schema({"city": STR, "rooms": INT, "square_meters": INT, "rent": INT,
                        "pets": BOOL}),
     "expected": {"city": "Vienna", "rooms": 3, "square_meters": 75, "rent": 1400,
                  "pets": True}},
    {"name": "appointment",
     "text": "Your appointment with Dr. Patel, dentist, is on 2024-11-05 at 9:30.",
     "schema": _schema({"doctor": STR, "specialty": STR, "date": DATE, "time": STR}),
     "expected": {"doctor": "Dr. Patel", "specialty": "dentist", "date": "2024-11-05",
                  "time": "9:30"}},
    {"name": "order",
     "text": "Order 9921: two blue mugs and one red teapot, shipped to Leeds by express "
             "delivery.",
     "schema": _schema({"order_id": INT, "items": _strings(), "city": STR,
                        "shipping": _enum("standard", "express")}),
     "expected": {"order_id": 9921, "items": ["blue mugs", "red teapot"], "city": "Leeds",
                  "shipping": "express"}},
    {"name": "bug report",
     "text": "Critical bug: the app crashes on Android 14 when the user taps Export. "
             "Reported by Tom.",
     "schema": _schema({"severity": _enum("low", "medium", "high", "critical"),
                        "platform": STR, "action": STR, "reporter": STR}),
     "expected": {"severity": "critical", "platform": "Android 14", "action": "Export",
                  "reporter": "Tom"}},
    {"name": "meeting",
     "text": "Team sync on Monday at 10:00 in room B12 with Ana, Luis and Mei.",
     "schema": _schema({"day": _enum("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
                        "time": STR, "room": STR, "attendees": _strings()}),
     "expected": {"day": "Monday", "time": "10:00", "room": "B12",
                  "attendees": ["Ana", "Luis", "Mei"]}},
    {"name": "restaurant review",
     "text": "Trattoria Sole in Naples: amazing pizza, friendly staff. I give it 5 stars.",
     "schema": _schema({"restaurant": STR, "city": STR, "stars": INT,
                        "sentiment": _enum("positive", "neutral", "negative")}),
     "expected": {"restaurant": "Trattoria Sole", "city": "Naples", "stars": 5,
                  "sentiment": "positive"}},
    {"name": "car",
     "text": "For sale: a 2018 Toyota Corolla with 64000 kilometers, asking 11500 dollars.",
     "schema": _schema({"make": STR, "model": STR, "year": INT, "kilometers": INT,
                        "price": INT}),
     "expected": {"make": "Toyota", "model": "Corolla", "year": 2018, "kilometers": 64000,
                  "price": 11500}},
    {"name": "hotel",
     "text": "Booking confirmed at Hotel Aurora, Reykjavik, for 2 guests, 3 nights, "
             "breakfast included.",
     "schema": _schema({"hotel": STR, "city": STR, "guests": INT, "nights": INT,
                        "breakfast": BOOL}),
     "expected": {"hotel": "Hotel Aurora", "city": "Reykjavik", "guests": 2, "nights": 3,
                  "breakfast": True}},
    {"name": "match",
     "text": "Ajax beat PSV 3 to 1 on Sunday in Amsterdam.",
     "schema": _schema({"winner": STR, "loser": STR, "winner_goals": INT,
                        "loser_goals": INT, "city": STR}),
     "expected": {"winner": "Ajax", "loser": "PSV", "winner_goals": 3, "loser_goals": 1,
                  "city": "Amsterdam"}},
    {"name": "transaction",
     "text": "On 2024-02-29 you paid 42.99 USD to Green Grocers with your debit card.",
     "schema": _schema({"date": DATE, "amount": NUM, "currency": _enum("EUR", "USD", "GBP"),
                        "merchant": STR, "card": _enum("debit", "credit")}),
     "expected": {"date": "2024-02-29", "amount": 42.99, "currency": "USD",
                  "merchant": "Green Grocers", "card": "debit"}},
    {"name": "student",
     "text": "Lena Fischer scored 92 in mathematics and passed the year.",
     "schema": _schema({"student": STR, "subject": STR, "score": INT, "passed": BOOL}),
     "expected": {"student": "Lena Fischer", "subject": "mathematics", "score": 92,
                  "passed": True}},
    {"name": "conference",
     "text": "PyCon Italia runs from 2025-05-28 to 2025-05-31 in Florence.",
     "schema": _schema({"conference": STR, "start": DATE, "end": DATE, "city": STR}),
     "expected": {"conference": "PyCon Italia", "start": "2025-05-28", "end": "2025-05-31",
                  "city": "Florence"}},
    {"name": "pet",
     "text": "Biscuit is a 4 year old golden retriever who loves swimming.",
     "schema": _schema({"name": STR, "species": _enum("dog", "cat", "bird", "rabbit"),
                        "breed": STR, "age": INT}),
     "expected": {"name": "Biscuit", "species": "dog", "breed": "golden retriever",
                  "age": 4}},
    {"name": "concert",
     "text": "Tickets for Radiohead at Madison Square Garden on 2025-09-12 cost 95 dollars.",
     "schema": _schema({"artist": STR, "venue": STR, "date": DATE, "price": INT}),
     "expected": {"artist": "Radiohead", "venue": "Madison Square Garden",
                  "date": "2025-09-12", "price": 95}},
    {"name": "package",
     "text": "Package 1Z999 is out for delivery in Denver and should arrive by 6 pm.",
     "schema": _schema({"tracking": STR, "status": _enum("in transit", "out for delivery",
                                                          "delivered"),
                        "city": STR, "eta": STR}),
     "expected": {"tracking": "1Z999", "status": "out for delivery", "city": "Denver",
                  "eta": "6 pm"}},
    {"name": "support ticket",
     "text": "Customer Raj Mehta cannot log in since the password reset; urgent, account "
             "number 55120.",
     "schema": _schema({"customer": STR, "problem": STR, "urgent": BOOL, "account": INT}),
     "expected": {"customer": "Raj Mehta", "problem": "cannot log in", "urgent": True,
                  "account": 55120}},
    {"name": "email",
     "text": "From: Sam Lee. Subject: Quarterly report. Please review the attached report "
             "by Friday.",
     "schema": _schema({"sender": STR, "subject": STR, "deadline": STR,
                        "has_attachment": BOOL}),
     "expected": {"sender": "Sam Lee", "subject": "Quarterly report", "deadline": "Friday",
                  "has_attachment": True}},
    {"name": "trip",
     "text": "We fly from Madrid to Tokyo on 2025-04-02 and return on 2025-04-16, two adults.",
     "schema": _schema({"origin": STR, "destination": STR, "depart": DATE, "return": DATE,
                        "travelers": INT}),
     "expected": {"origin": "Madrid", "destination": "Tokyo", "depart": "2025-04-02",
                  "return": "2025-04-16", "travelers": 2}},
    {"name": "person",
     "text": "Kwame Mensah, 34, is a teacher from Accra who speaks English and Twi.",
     "schema": _schema({"name": STR, "age": INT, "job": STR, "city": STR,
                        "languages": _strings()}),
     "expected": {"name": "Kwame Mensah", "age": 34, "job": "teacher", "city": "Accra",
                  "languages": ["English", "Twi"]}},
    {"name": "plant",
     "text": "The snake plant needs watering every 14 days, likes indirect light and is "
             "toxic to cats.",
     "schema": _schema({"plant": STR, "water_every_days": INT,
                        "light": _enum("direct", "indirect", "shade"), "toxic_to_pets": BOOL}),
     "expected": {"plant": "snake plant", "water_every_days": 14, "light": "indirect",
                  "toxic_to_pets": True}},
    {"name": "address",
     "text": "Send it to Anna Novak, 12 Linden Street, Prague 11000, Czech Republic.",
     "schema": _schema({"name": STR, "address": _schema({"street": STR, "city": STR,
                                                         "postal_code": STR,
                                                         "country": STR})}),
     "expected": {"name": "Anna Novak",
                  "address": {"street": "12 Linden Street", "city": "Prague",
                              "postal_code": "11000", "country": "Czech Republic"}}},
    {"name": "course",
     "text": "The online course 'Intro to Statistics' has 12 lessons, costs 49 dollars and "
             "is taught by Prof. Kim.",
     "schema": _schema({"course": STR, "lessons": INT, "price": INT, "teacher": STR,
                        "online": BOOL}),
     "expected": {"course": "Intro to Statistics", "lessons": 12, "price": 49,
                  "teacher": "Prof. Kim", "online": True}},
]


def _same(value: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(value, bool):
        return value is expected
    if isinstance(expected, (int, float)):
        return isinstance(value, (int, float)) and abs(value - expected) < 1e-9
    if isinstance(expected, str):
        return isinstance(value, str) and value.strip().lower() == expected.strip().lower()
    if isinstance(expected, list):
        return (isinstance(value, list) and all(isinstance(v, str) for v in value)
                and {v.strip().lower() for v in value} == {e.lower() for e in expected})
    if isinstance(expected, dict):
        return isinstance(value, dict) and all(_same(value.get(k), v)
                                               for k, v in expected.items())
    return value == expected


def score(value: Any, expected: dict) -> int:
    """How many of the expected top-level properties `value` gets right (0 when it is not an
    object)."""
    if not isinstance(value, dict):
        return 0
    return sum(_same(value.get(key), answer) for key, answer in expected.items())
