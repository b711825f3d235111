"""Random writes through the host API, for tests that compare what is kept current with a fresh read."""

from __future__ import annotations

import random

import notochord
from notochord.errors import NotochordError

WORDS = ["granite", "river", "maple", "copper", "violet", "quartz", "harbor", "lantern", "meadow", "falcon", "Alice"]
DATES = ["2026-01-05", "2026-02-11", "2026-03-20", "2026-05-02", "2026-07-14", "2026-09-01"]
QUERIES = ["granite river", "copper", "violet lantern falcon", "alice meadow"]


def _body(rnd: random.Random) -> str:
    # several chunks for some documents: a move or an edit then touches more than one row
    return " ".join(rnd.choices(WORDS, k=rnd.choice([8, 40, 400])))


class Writer:
    """Random writes through the host API, remembering what it wrote so that it can edit and move it."""

    def __init__(self, space: notochord.Space, seed: int) -> None:
        self.space = space
        self.rnd = random.Random(seed)
        self.other = space.user.collections.create(f"other-{seed}").id
        self.keep = space.user.collections.get("keep").id
        self.keyed: list[str] = []
        self.loose: list[int] = []
        self.changes: list[int] = []

    def step(self) -> str:
        rnd, user = self.rnd, self.space.user
        kind = rnd.choice(["new", "new", "edit", "delete", "move", "redate", "revert", "fact"])
        date = {"date": rnd.choice(DATES)}
        if kind == "new" or (kind in ("edit", "redate") and not self.keyed) or (kind == "move" and not self.loose):
            if rnd.random() < 0.5:
                key = f"k{len(self.keyed)}-{rnd.random()}"
                self.keyed.append(key)
                out = user.documents.upsert(collection="keep", key=key, title=key, body=_body(rnd), meta=date)
            else:
                collection = rnd.choice([self.keep, self.other])
                out = user.documents.upsert(collection=collection, title="loose", body=_body(rnd), meta=date)
                self.loose.append(out.id)
            kind = "new"
        elif kind == "edit":
            key = rnd.choice(self.keyed)
            out = user.documents.upsert(collection="keep", key=key, title=key, body=_body(rnd), meta=date)
        elif kind == "redate":
            key = rnd.choice(self.keyed)
            found = user.documents.get_by_key("keep", key)
            if found is None:
                return "nothing"
            out = user.documents.upsert(collection="keep", key=key, title=key, body=found.body, meta=date)
        elif kind == "delete":
            ids = [d.id for d in user.documents.list("keep")] + [d.id for d in user.documents.list(self.other)]
            if not ids:
                return "nothing"
            self.changes.append(user.documents.delete(rnd.choice(ids)))
            return kind
        elif kind == "move":
            doc = rnd.choice(self.loose)
            try:
                now = user.documents.get(doc).collection_id
            except NotochordError:
                return "nothing"
            moved = user.documents.move(doc, collection=self.other if now == self.keep else self.keep)
            assert moved is not None, "a move to the other collection is a change"
            self.changes.append(moved)
            return kind
        elif kind == "revert":
            if not self.changes:
                return "nothing"
            try:
                self.space.changes.revert(self.changes.pop(rnd.randrange(len(self.changes))))
            except NotochordError:
                return "nothing"  # superseded by a later change of the same document: refused
            return kind
        else:
            user.facts.put(predicate="pref.colour", value=rnd.choice(WORDS))
            return kind
        if out.change_id is not None:
            self.changes.append(out.change_id)
        return kind
