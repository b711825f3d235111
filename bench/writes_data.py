"""The datasets of ``bench/writes.py``: people, their facts, lookups, and notes that mention them."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from notochord.knowledge.predicates import CORE_PREDICATES

FIRST_NAMES = (
    "Anna", "Bram", "Chen", "Daan", "Eva", "Fatima", "Femke", "Hao", "Ingrid", "Jan", "Jing", "Joost",
    "Karim", "Lars", "Lei", "Lieke", "Lin", "Maarten", "Mei", "Mila", "Noor", "Pieter", "Ping", "Qiang",
    "Ravi", "Ruben", "Sanne", "Sophie", "Tim", "Wei", "Xiu", "Yan", "Yusuf", "Zoë", "Ming",
)  # fmt: skip
LAST_NAMES = (
    "Bakker", "Chen", "de Boer", "de Jong", "de Vries", "Dekker", "Huang", "Janssen", "Li", "Liu",
    "Meijer", "Mulder", "Peters", "Smit", "Visser", "van Dijk", "van den Berg", "Wang", "Wu", "Xu",
    "Yang", "Zhao", "Zhou", "O'Brien", "张", "王",
)  # fmt: skip
CITIES = (
    "Utrecht", "Amsterdam", "Rotterdam", "Delft", "Leiden", "Groningen", "Eindhoven", "Shanghai",
    "Beijing", "Shenzhen", "Hangzhou", "Berlin", "Antwerp", "London", "Lisbon", "Singapore",
)  # fmt: skip
COMPANIES = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark Industries", "Wayne Bio")
TITLES = ("engineer", "designer", "product manager", "nurse", "teacher", "researcher", "accountant", "chef")
DISHES = (
    "dumplings", "ramen", "sushi", "stroopwafels", "bitterballen", "hotpot", "mapo tofu", "pad thai",
    "lasagne", "paella", "falafel", "pho", "biryani", "croissants", "pierogi", "risotto", "ceviche",
    "bibimbap", "shakshuka", "goulash", "小笼包", "erwtensoep",
)  # fmt: skip
CUISINES = ("Sichuan", "Cantonese", "Japanese", "Italian", "Indonesian", "Ethiopian", "Mexican", "Dutch")
ADJECTIVES = ("spicy", "home-made", "vegetarian", "grandma's", "street-food", "smoked", "fresh", "crispy")
ALLERGIES = ("peanuts", "shellfish", "lactose", "gluten", "pollen", "cats", "penicillin", "sesame")
LANGUAGES = ("Dutch", "English", "Mandarin", "Cantonese", "German", "French", "Spanish", "Arabic")
PROJECTS = ("migration", "rebrand", "data platform", "mobile app", "audit", "launch", "onboarding", "pilot")
EVENTS = ("dentist", "birthday dinner", "team offsite", "flight", "concert", "parents' evening", "1:1")
NOTE_PHRASES = (
    "likes to talk about cycling", "prefers short messages in the morning", "met at the conference",
    "asked about the quarterly report", "owes me a book recommendation", "moving house in summer",
    "plays the piano", "works remotely on Fridays", "has two kids at the same school as ours",
    "recommended the noodle place near the station", "is training for a marathon",
    "喜欢喝茶", "下个月去上海出差",
)  # fmt: skip

# (predicate, weight); the weights make ``many`` predicates most of the data, as in real use.
PREDICATES: tuple[tuple[str, int], ...] = (
    ("pref.food.like", 14),
    ("pref.food.dislike", 5),
    ("pref.food.cuisine", 5),
    ("contact.email", 8),
    ("contact.phone", 6),
    ("identity.nickname", 4),
    ("identity.language", 4),
    ("work.project", 8),
    ("schedule.event", 12),
    ("health.allergy", 3),
    ("x.note", 16),
    ("x.gift_idea", 5),
    ("location.home.city", 3),
    ("work.company", 3),
    ("work.title", 2),
    ("identity.birthday", 2),
)
LOOKUP_PREFIXES: tuple[str | None, ...] = (
    None,
    "pref",
    "pref.food",
    "pref.food.like",
    "contact",
    "contact.email",
    "work",
    "schedule.event",
    "location.home",
    "identity",
    "health",
    "x",
    "x.note",
)
ONE_PREDICATES = frozenset(p.name for p in CORE_PREDICATES if p.cardinality == "one")
SELF_SHARE = 0.05
"""Share of the facts about the user; the rest is spread over the people."""


@dataclass(frozen=True)
class FactSpec:
    subject: int
    """Index into the subjects: 0 is ``self``, 1… the people."""
    predicate: str
    value: Any


def _value(rng: random.Random, predicate: str, person: str) -> Any:
    slug = person.lower().replace(" ", ".").replace("'", "")
    match predicate:
        case "pref.food.like" | "pref.food.dislike" | "x.gift_idea":
            return f"{rng.choice(ADJECTIVES)} {rng.choice(DISHES)}"
        case "pref.food.cuisine":
            return rng.choice(CUISINES)
        case "contact.email":
            domain = rng.choice(("example.org", "example.com", "mail.example.nl", "qq.example.cn"))
            return f"{slug}{rng.randrange(1, 10_000)}@{domain}"
        case "contact.phone":
            return f"+31 6 {rng.randrange(10_000_000, 99_999_999)}"
        case "identity.nickname":
            suffix = rng.choice(("", "je", "tje", " ge", " xiao"))
            return f"{person.split()[0][:3]}{suffix}{rng.randrange(100)}"
        case "identity.language":
            return rng.choice(LANGUAGES)
        case "work.project":
            return f"{rng.choice(COMPANIES)} {rng.choice(PROJECTS)} {rng.randrange(2020, 2027)}"
        case "schedule.event":
            return {
                "title": rng.choice(EVENTS),
                "date": f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
                "time": f"{rng.randrange(7, 22):02d}:{rng.choice(('00', '15', '30', '45'))}",
                "place": rng.choice(CITIES),
            }
        case "health.allergy":
            return rng.choice(ALLERGIES)
        case "x.note":
            return "; ".join(rng.sample(NOTE_PHRASES, rng.randrange(1, 5)))
        case "location.home.city":
            return rng.choice(CITIES)
        case "work.company":
            return rng.choice(COMPANIES)
        case "work.title":
            return rng.choice(TITLES)
        case "identity.birthday":
            return f"{rng.randrange(1950, 2010)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    raise AssertionError(predicate)


def people(count: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)} {n}" for n in range(count)]


def dataset(size: int, names: Sequence[str], rng: random.Random) -> list[FactSpec]:
    """``size`` facts with no identical (subject, predicate, value), so every put is a real write."""
    names_by_subject = ["Me Myself", *names]
    predicates = [p for p, _ in PREDICATES]
    weights = [w for _, w in PREDICATES]
    seen: set[tuple[int, str, str]] = set()
    specs: list[FactSpec] = []
    while len(specs) < size:
        subject = 0 if rng.random() < SELF_SHARE else rng.randrange(1, len(names_by_subject))
        predicate = rng.choices(predicates, weights)[0]
        value = _value(rng, predicate, names_by_subject[subject])
        key = (subject, predicate, json.dumps(value, sort_keys=True))
        if key not in seen:
            seen.add(key)
            specs.append(FactSpec(subject, predicate, value))
    return specs


def lookups(count: int, subjects: int, rng: random.Random) -> list[tuple[int, str | None]]:
    return [(rng.randrange(subjects), rng.choice(LOOKUP_PREFIXES)) for _ in range(count)]


TOPICS = (
    "the dinner on Friday", "the quarterly report", "the school trip", "the new kitchen", "the marathon",
    "the move to Delft", "the garden", "the conference in Shanghai", "the book club", "the data platform",
)  # fmt: skip


def notes(count: int, names: Sequence[str], rng: random.Random) -> list[tuple[str, str]]:
    """``count`` (title, body) notes of about three chunks, each paragraph naming a few people."""
    found: list[tuple[str, str]] = []
    for n in range(count):
        paragraphs = []
        for _ in range(12):
            who = ", ".join(rng.sample(list(names), 3))
            paragraphs.append(
                f"{who} talked about {rng.choice(TOPICS)}; {rng.choice(NOTE_PHRASES)}, and "
                f"{rng.choice(ADJECTIVES)} {rng.choice(DISHES)} came up again before {rng.choice(EVENTS)}."
            )
        found.append((f"Note {n}: {rng.choice(TOPICS)}", "\n\n".join(paragraphs)))
    return found
