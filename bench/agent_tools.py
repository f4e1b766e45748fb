"""Tool sets and assistant outputs for bench/agent.py.

A pool of hand-written tools in the OpenAI format (weather, calendar, mail, files, SQL, shop,
travel, ...: enums, bounded numbers, formats, nested objects, arrays of objects, optional
arguments), drawn into `N_SETS` seeded tool sets of 1 to 8 tools. For each set, assistant
outputs as Qwen's chat template writes them in Hermes format (optional text, then calls
`<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` joined by newlines, with
`json.dumps`' default separators), or text alone; the arguments are drawn from the tools'
schemas. `python bench/agent_tools.py` checks them with jsonschema, and each output against
what Qwen3's own chat template (../shared/tokenizers/qwen3, through transformers) writes.
"""

from __future__ import annotations

import json
import random
from typing import Any

N_SETS = 64
SEED = 29


def tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


def string(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


UNIT = {"type": "string", "enum": ["celsius", "fahrenheit"]}
DATE = string("a date", format="date")
EMAIL = string("an e-mail address", format="email")
MONEY = {"type": "number", "minimum": 0}
PERSON = {"type": "object", "properties": {"name": string("full name"), "email": EMAIL},
          "required": ["name"]}

POOL = [
    tool("get_weather", "Current weather in a city.",
         {"city": string("city name"), "unit": UNIT}, ["city"]),
    tool("get_forecast", "Forecast for the next days.",
         {"city": string("city name"), "days": {"type": "integer", "minimum": 1, "maximum": 14},
          "unit": UNIT}, ["city", "days"]),
    tool("create_event", "Add an event to the calendar.",
         {"title": string("title", maxLength=80), "date": DATE,
          "start_time": string("HH:MM", pattern="^[0-2][0-9]:[0-5][0-9]$"),
          "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480},
          "attendees": {"type": "array", "items": PERSON, "maxItems": 10}},
         ["title", "date", "start_time"]),
    tool("list_events", "Events between two dates.",
         {"from_date": DATE, "to_date": DATE, "calendar": {"enum": ["work", "home", "all"]}},
         ["from_date", "to_date"]),
    tool("send_email", "Send an e-mail.",
         {"to": {"type": "array", "items": EMAIL, "minItems": 1}, "subject": string("subject"),
          "body": string("text"), "cc": {"type": "array", "items": EMAIL},
          "priority": {"enum": ["low", "normal", "high"]}}, ["to", "subject", "body"]),
    tool("search_email", "Search the mailbox.",
         {"query": string("words"), "folder": {"enum": ["inbox", "sent", "archive"]},
          "limit": {"type": "integer", "minimum": 1, "maximum": 100}}, ["query"]),
    tool("read_file", "Read a text file.",
         {"path": string("a path"), "encoding": {"enum": ["utf-8", "latin-1"]},
          "max_bytes": {"type": "integer", "minimum": 1}}, ["path"]),
    tool("write_file", "Write a text file.",
         {"path": string("a path"), "content": string("text"), "append": {"type": "boolean"}},
         ["path", "content"]),
    tool("list_directory", "Files in a folder.",
         {"path": string("a path"), "recursive": {"type": "boolean"},
          "pattern": string("a glob")}, ["path"]),
    tool("run_sql", "Run a read-only SQL query.",
         {"query": string("SQL"), "database": {"enum": ["sales", "hr", "inventory"]},
          "max_rows": {"type": "integer", "minimum": 1, "maximum": 1000}},
         ["query", "database"]),
    tool("search_products", "Search the shop's catalogue.",
         {"query": string("words"),
          "category": {"enum": ["books", "electronics", "garden", "toys", "clothing"]},
          "price_range": {"type": "object", "properties": {"min": MONEY, "max": MONEY}},
          "in_stock": {"type": "boolean"},
          "sort": {"enum": ["relevance", "price_asc", "price_desc", "rating"]}},
         ["query"]),
    tool("add_to_cart", "Put a product in the cart.",
         {"product_id": string("id", pattern="^P[0-9]{6}$"),
          "quantity": {"type": "integer", "minimum": 1, "maximum": 20}},
         ["product_id", "quantity"]),
    tool("place_order", "Order the items.",
         {"items": {"type": "array", "minItems": 1, "items": {
             "type": "object", "properties": {
                 "product_id": string("id", pattern="^P[0-9]{6}$"),
                 "quantity": {"type": "integer", "minimum": 1}},
             "required": ["product_id", "quantity"]}},
          "shipping": {"type": "object", "properties": {
              "street": string("street"), "city": string("city"),
              "postal_code": string("code", maxLength=10),
              "country": string("ISO code", pattern="^[A-Z]{2}$")},
              "required": ["street", "city", "country"]},
          "express": {"type": "boolean"}}, ["items", "shipping"]),
    tool("track_package", "Where a package is.",
         {"tracking_number": string("number", minLength=8, maxLength=20),
          "carrier": {"enum": ["ups", "fedex", "dhl", "usps"]}}, ["tracking_number"]),
    tool("book_flight", "Book a flight.",
         {"origin": string("IATA code", pattern="^[A-Z]{3}$"),
          "destination": string("IATA code", pattern="^[A-Z]{3}$"), "date": DATE,
          "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
          "cabin": {"enum": ["economy", "premium", "business", "first"]}},
         ["origin", "destination", "date"]),
    tool("book_hotel", "Book a hotel room.",
         {"city": string("city"), "check_in": DATE, "check_out": DATE,
          "guests": {"type": "integer", "minimum": 1, "maximum": 8},
          "max_price": MONEY}, ["city", "check_in", "check_out"]),
    tool("convert_currency", "Convert money.",
         {"amount": MONEY, "from_currency": string("code", pattern="^[A-Z]{3}$"),
          "to_currency": string("code", pattern="^[A-Z]{3}$")},
         ["amount", "from_currency", "to_currency"]),
    tool("get_stock_price", "A share's price.",
         {"symbol": string("ticker", pattern="^[A-Z]{1,5}$"),
          "exchange": {"enum": ["NYSE", "NASDAQ", "LSE"]}}, ["symbol"]),
    tool("translate", "Translate text.",
         {"text": string("text"), "source_language": string("code", maxLength=5),
          "target_language": string("code", maxLength=5)}, ["text", "target_language"]),
    tool("set_reminder", "Remind the user.",
         {"message": string("what"), "at": string("when", format="date-time"),
          "repeat": {"enum": ["never", "daily", "weekly"]}}, ["message", "at"]),
    tool("create_ticket", "Open a support ticket.",
         {"title": string("title"), "description": string("text"),
          "severity": {"enum": ["low", "medium", "high", "critical"]},
          "labels": {"type": "array", "items": string("label")},
          "assignee": PERSON}, ["title", "severity"]),
    tool("get_user", "A user's profile.",
         {"user_id": {"type": "integer", "minimum": 1}}, ["user_id"]),
    tool("update_user", "Change a user's profile.",
         {"user_id": {"type": "integer", "minimum": 1}, "display_name": string("name"),
          "email": EMAIL, "preferences": {"type": "object", "properties": {
              "theme": {"enum": ["light", "dark"]}, "language": string("code"),
              "notifications": {"type": "boolean"}}}}, ["user_id"]),
    tool("calculate", "Evaluate an arithmetic expression.",
         {"expression": string("e.g. 2 * (3 + 4)")}, ["expression"]),
    tool("web_search", "Search the web.",
         {"query": string("words"), "num_results": {"type": "integer", "minimum": 1,
                                                    "maximum": 20},
          "safe_search": {"type": "boolean"}}, ["query"]),
    tool("get_directions", "Route between two places.",
         {"origin": string("place"), "destination": string("place"),
          "mode": {"enum": ["driving", "walking", "transit", "cycling"]},
          "avoid": {"type": "array", "items": {"enum": ["tolls", "highways", "ferries"]}}},
         ["origin", "destination"]),
    tool("play_music", "Play music.",
         {"query": string("song, artist or playlist"),
          "shuffle": {"type": "boolean"}, "volume": {"type": "integer", "minimum": 0,
                                                     "maximum": 100}}, ["query"]),
    tool("control_light", "Switch a light.",
         {"room": {"enum": ["kitchen", "living_room", "bedroom", "office"]},
          "on": {"type": "boolean"}, "brightness": {"type": "integer", "minimum": 0,
                                                    "maximum": 100},
          "color": string("hex", pattern="^#[0-9a-f]{6}$")}, ["room", "on"]),
    tool("get_news", "Headlines.",
         {"topic": {"enum": ["world", "business", "technology", "sports", "science"]},
          "country": string("ISO code", pattern="^[a-z]{2}$"),
          "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, ["topic"]),
    tool("summarize_document", "Summarize a document.",
         {"document_id": string("id"), "max_words": {"type": "integer", "minimum": 10},
          "style": {"enum": ["bullets", "paragraph"]}}, ["document_id"]),
]

WORDS = ["Paris", "Lisbon", "report", "quarterly sales", "Ana Lima", "tea", "red shoes",
         "notes.txt", "/home/ana/docs", "SELECT name FROM staff", "hello world", "meeting",
         "Zoë", "München", "東京", "x + 1", "weekly sync", "the \"best\" one", "a\\b"]
TEXTS = ["", "Let me check that for you.\n", "Sure! I'll look it up.\n\n",
         "I need two things first.\n", "Voilà, je vérifie.\n"]
ANSWERS = ["It is sunny and 21 °C in Lisbon.", "Done: the event is in your calendar.",
           "I found 3 products under 50 EUR.", "Here is the summary you asked for."]


def value(schema: dict, rng: random.Random) -> Any:
    """A value valid against the small schema subset the pool uses."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {k: value(s, rng) for k, s in props.items()
                if k in required or rng.random() < 0.5}
    if kind == "array":
        n = rng.randint(schema.get("minItems", 0), min(schema.get("maxItems", 3), 3))
        items = [value(schema.get("items", {}), rng) for _ in range(n)]
        return list(dict.fromkeys(items)) if schema.get("uniqueItems") else items
    if kind == "integer":
        return rng.randint(schema.get("minimum", -5), schema.get("maximum", 500))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", -10), schema.get("maximum", 999)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    return string_value(schema, rng)


def string_value(schema: dict, rng: random.Random) -> str:
    fmt, pattern = schema.get("format"), schema.get("pattern", "")
    if fmt == "date":
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if fmt == "date-time":
        return f"2025-06-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:30:00Z"
    if fmt == "email":
        return rng.choice(["ana@example.com", "bo.li@mail.example.org"])
    samples = {"^[0-2][0-9]:[0-5][0-9]$": "09:30", "^P[0-9]{6}$": "P004213",
               "^[A-Z]{2}$": "PT", "^[A-Z]{3}$": rng.choice(["LIS", "CDG", "EUR", "USD"]),
               "^[A-Z]{1,5}$": "NVDA", "^#[0-9a-f]{6}$": "#ffaa00", "^[a-z]{2}$": "de"}
    if pattern:
        return samples[pattern]
    text = rng.choice(WORDS)
    if "minLength" in schema:
        text = "1Z" + "0" * (schema["minLength"] - 2) + "42"
    return text[:schema.get("maxLength", len(text))]


def tool_sets() -> list[list[dict]]:
    rng = random.Random(SEED)
    sets = [[t] for t in POOL[:8]]  # some single tools
    while len(sets) < N_SETS:
        sets.append(rng.sample(POOL, rng.randint(2, 8)))
    return sets


def messages(tools: list[dict], k: int) -> list[tuple[str, list[dict]]]:
    """The assistant messages of tool set k, as (content, calls): one call, several calls,
    text alone. A call is `{"name": ..., "arguments": {...}}`."""
    rng = random.Random(SEED * 1000 + k)
    result = []
    for n_calls in (1, rng.randint(2, 3), 0):
        if n_calls == 0:
            result.append((rng.choice(ANSWERS), []))
            continue
        calls = []
        for _ in range(n_calls):
            function = rng.choice(tools)["function"]
            calls.append({"name": function["name"],
                          "arguments": value(function["parameters"], rng)})
        # the template writes one newline between the content and the first call
        text = rng.choice(TEXTS)
        result.append((text[:-1] if text else text, calls))
    return result


def hermes(content: str, calls: list[dict]) -> str:
    """What Qwen's chat template writes for an assistant message (up to its <|im_end|>)."""
    blocks = ["<tool_call>\n" + json.dumps({"name": c["name"], "arguments": c["arguments"]},
                                           ensure_ascii=False) + "\n</tool_call>"
              for c in calls]
    return content + ("\n" if content and calls else "") + "\n".join(blocks)


def outputs(tools: list[dict], k: int) -> list[str]:
    """The assistant outputs of tool set k, as the model writes them."""
    return [hermes(content, calls) for content, calls in messages(tools, k)]


def template_renderer():
    """Qwen3's own chat template (transformers and ../shared's tokenizer), or None."""
    try:
        import transformers
    except ImportError:
        return None
    from maskbench_files import SHARED

    folder = SHARED / "tokenizers" / "qwen3"
    if not (folder / "tokenizer_config.json").is_file():
        return None
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))

    def render(tools: list[dict], content: str, calls: list[dict]) -> str:
        # a user turn after the assistant's: the template then writes the assistant turn
        # as it was generated (no empty <think> block, which it adds to a last turn)
        chat = [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": content,
                 "tool_calls": [{"type": "function", "function": c} for c in calls]},
                {"role": "user", "content": "Thanks"}]
        text = tok.apply_chat_template(chat, tools=tools, tokenize=False)
        return text.split("<|im_start|>assistant\n", 1)[1].split("<|im_end|>", 1)[0]

    return render


def check() -> None:
    """Every call of every output validates against its tool's schema, and every output is
    what Qwen3's chat template writes for its message (where transformers and the tokenizer
    folder are present)."""
    import jsonschema

    render = template_renderer()
    sets = tool_sets()
    n_calls = n_texts = n_many = 0
    for k, tools in enumerate(sets):
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        assert 1 <= len(tools) <= 8 and len(schemas) == len(tools), k
        for content, calls in messages(tools, k):
            text = hermes(content, calls)
            for block in text.split("<tool_call>\n")[1:]:  # read back from the text
                call = json.loads(block.split("\n</tool_call>")[0])
                jsonschema.validate(call["arguments"], schemas[call["name"]],
                                    format_checker=jsonschema.FormatChecker())
            assert text.count("<tool_call>") == len(calls), (k, text)
            if render is not None:
                assert render(tools, content, calls) == text, (k, text)
            n_calls += len(calls)
            n_texts += not calls
            n_many += len(calls) > 1
    print(f"{len(sets)} tool sets, {n_calls} calls, all valid; {n_texts} outputs of text "
          f"alone, {n_many} of several calls; "
          + ("each output as Qwen3's chat template writes it" if render else
             "not compared with Qwen3's chat template (transformers or the tokenizer missing)"))


if __name__ == "__main__":
    check()
