"""The vocabulary: the 30 core predicates, declarations and predicate-hint resolution."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from notochord import KnowledgeValidationError, Space
from notochord.knowledge.predicates import CORE_PREDICATES, FIRST_LEVELS, predicate_problem
from notochord.knowledge.vocabulary import slug_for_hint

EXPECTED_CORE = {
    "identity.name": "one",
    "identity.nickname": "many",
    "identity.birthday": "one",
    "identity.language": "many",
    "contact.email": "many",
    "contact.phone": "many",
    "contact.address": "many",
    "location.home.city": "one",
    "location.home.address": "one",
    "location.work.city": "one",
    "location.timezone": "one",
    "relation.family": "many",
    "relation.spouse": "one",
    "relation.friend": "many",
    "relation.colleague": "many",
    "relation.member_of": "many",
    "work.company": "one",
    "work.title": "one",
    "work.project": "many",
    "pref.food.like": "many",
    "pref.food.dislike": "many",
    "pref.food.diet": "many",
    "pref.food.cuisine": "many",
    "pref.communication.style": "one",
    "pref.communication.language": "one",
    "schedule.routine": "many",
    "schedule.event": "many",
    "health.allergy": "many",
    "health.condition": "many",
    "finance.currency": "one",
}


def _vocab(space: Space) -> dict[str, str]:
    with space.core.store.read() as conn:
        return {p.name: p.cardinality for p in space.core.vocabulary.snapshot(conn).entries}


def test_new_space_has_exactly_the_30_core_predicates_with_their_cardinality(space: Space) -> None:
    """K-VOCAB-01…31, K-VOCAB-33."""
    assert _vocab(space) == EXPECTED_CORE
    assert [p.name for p in CORE_PREDICATES] == list(EXPECTED_CORE)


@pytest.mark.parametrize(
    ("predicate", "english", "chinese"),
    [
        ("location.home.city", "City of residence", "居住城市"),
        ("identity.name", "Name", "姓名"),
        ("pref.food.like", "Foods you like", "饮食偏好"),
        ("relation.member_of", "Member of", "人际关系"),
        ("contact.email", "Email", "联系方式"),
        ("finance.currency", "Usual currency", "常用货币"),
    ],
)
def test_core_predicates_carry_english_and_chinese_display_names(predicate: str, english: str, chinese: str) -> None:
    """K-VOCAB-32, OD-K53."""
    core = {p.name: p for p in CORE_PREDICATES}
    assert (core[predicate].display_en, core[predicate].display_zh) == (english, chinese)


def test_first_level_is_fixed_to_the_ten_names() -> None:
    """K-CON-13."""
    assert FIRST_LEVELS == (
        "identity", "contact", "location", "relation", "pref", "schedule", "work", "health", "finance", "x",
    )  # fmt: skip
    assert predicate_problem("hobby.music") is not None
    assert predicate_problem("pref.music.like") is None


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("location", "at least 2"),
        ("Location.home", "malformed"),
        ("pref..food", "malformed"),
        ("pref.food-like", "malformed"),
        ("pref.food like", "malformed"),
        ("pets.dog", "must start with"),
    ],
)
def test_malformed_predicates_are_refused_with_the_reason(name: str, fragment: str) -> None:
    """K-CON-12, OD-K13."""
    problem = predicate_problem(name)
    assert problem is not None
    assert fragment in problem


def _resolve(space: Space, hint: str) -> tuple[str, bool]:
    with space.core.store.read() as conn:
        r = space.core.vocabulary.resolve(conn, hint)
    return r.name, r.is_new


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ("location.home.city", "location.home.city"),
        ("  Location.Home.City ", "location.home.city"),
        ("City of residence", "location.home.city"),
        ("居住城市", "location.home.city"),
        ("foods you dislike", "pref.food.dislike"),
        ("residence", "location.home.city"),
        ("currency", "finance.currency"),
    ],
)
def test_hints_resolve_by_name_then_alias_then_description(space: Space, hint: str, expected: str) -> None:
    """K-FACT-13, K-FACT-18, OD-K09."""
    assert _resolve(space, hint) == (expected, False)


def test_declared_alias_and_description_resolve_in_declaration_order(space: Space) -> None:
    """K-MAN-08, OD-K09: declared aliases resolve exactly; descriptions match every word."""
    with space.core.store.write(actor=space.user.actor, run_id=None) as tx:
        space.core.vocabulary.add(
            tx.conn,
            name="pref.food.rated",
            cardinality="many",
            description="Dishes you have rated highly, used to recommend similar dishes",
            declared_by="gem:recipes",
            aliases=("top-rated dishes",),
            now=tx.now,
        )
    assert _resolve(space, "Top-rated dishes") == ("pref.food.rated", False)
    assert _resolve(space, "rated dishes") == ("pref.food.rated", False)


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ("Favourite band", "x.favourite_band"),
        ("pref.music.like", "x.pref.music.like"),
        ("x.pets.dog_name", "x.pets.dog_name"),
        ("Lieblings-Café!", "x.lieblings_café_"),
    ],
)
def test_unmatched_hints_land_under_x_with_a_slug(space: Space, hint: str, expected: str) -> None:
    """K-FACT-20, OD-K10."""
    assert slug_for_hint(hint) == expected
    assert _resolve(space, hint) == (expected, True)


def test_a_hint_with_nothing_to_name_is_refused() -> None:
    """OD-K10: a slug needs letters or digits."""
    with pytest.raises(KnowledgeValidationError, match="no letters or digits"):
        slug_for_hint("!!! ...")


def test_redeclaring_with_another_cardinality_is_refused_and_same_cardinality_merges_aliases(
    space: Space,
) -> None:
    """OD-K50."""
    store = space.core.store
    with store.write(actor=space.user.actor, run_id=None) as tx:
        space.core.vocabulary.add(
            tx.conn,
            name="work.city",
            cardinality="one",
            description="d",
            declared_by="gem:a",
            aliases=("a",),
            now=tx.now,
        )
    with store.write(actor=space.user.actor, run_id=None) as tx:
        merged = space.core.vocabulary.add(
            tx.conn,
            name="work.city",
            cardinality="one",
            description="d",
            declared_by="gem:b",
            aliases=("b",),
            now=tx.now,
        )
    assert merged.aliases == ("a", "b")
    with (
        pytest.raises(KnowledgeValidationError, match="cannot be re-declared as many"),
        store.write(actor=space.user.actor, run_id=None) as tx,
    ):
        space.core.vocabulary.add(
            tx.conn,
            name="location.home.city",
            cardinality="many",
            description="d",
            declared_by="gem:c",
            now=tx.now,
        )


def test_vocabulary_changes_rolled_back_with_their_transaction_leave_no_stale_cache(space: Space) -> None:
    """A declaration inside a failed write disappears, and the cache does not keep it."""
    store = space.core.store

    class BoomError(Exception):
        pass

    with pytest.raises(BoomError), store.write(actor=space.user.actor, run_id=None) as tx:
        space.core.vocabulary.add(
            tx.conn, name="x.ghost", cardinality="many", description=None, declared_by="user", now=tx.now
        )
        assert space.core.vocabulary.get(tx.conn, "x.ghost") is not None
        raise BoomError
    with store.read() as conn:
        assert space.core.vocabulary.get(conn, "x.ghost") is None
        assert conn.execute(sa.text("select count(*) from predicates where name='x.ghost'")).scalar() == 0


def _rows(space: Space) -> dict[str, int]:
    with space.core.store.read() as conn:
        return {
            table: int(conn.execute(sa.text(f"select count(*) from {table}")).scalar_one())
            for table in ("facts", "changes", "predicates", "predicate_aliases")
        }


@pytest.mark.parametrize(
    ("hint", "code_point"),
    [
        pytest.param("pref.food\x00like", "U+0000", id="nul-between-segments"),
        pytest.param("favourite\x00band", "U+0000", id="nul-in-a-description"),
        pytest.param("\x1fsnack", "U+001F", id="unit-separator"),
        pytest.param("treat\x7f", "U+007F", id="delete"),
        pytest.param("pref.food\x1b[2Jlike", "U+001B", id="escape"),
        pytest.param("treat\x9b", "U+009B", id="c1-control-sequence"),
    ],
)
def test_a_hint_holding_a_control_character_is_refused_and_changes_nothing(
    space: Space, hint: str, code_point: str
) -> None:
    """K-FACT-13, OD-K09: a hint is one line of plain text; a control character in it that is not
    whitespace is neither taken as a separator nor folded into an ``x.`` slug, but refused, and no
    fact, change or predicate is added."""
    before = _rows(space)
    for write in (
        lambda: space.core.facts.put(actor=space.user.actor, hint=hint, value="tea"),
        lambda: _resolve(space, hint),
    ):
        with pytest.raises(KnowledgeValidationError) as caught:
            write()
        message = caught.value.message
        assert message.startswith(f"predicateHint contains a control character ({code_point})"), message
        assert "\\x" not in message
        assert hint not in message
    assert _rows(space) == before


@pytest.mark.parametrize("hint", ["favourite\tband", "favourite\nband\n", " favourite\x85band\r\n"])
def test_tabs_and_line_breaks_in_a_hint_are_whitespace_to_collapse(space: Space, hint: str) -> None:
    """OD-K09: normalising trims and collapses whitespace, and a tab or a line break is whitespace."""
    assert _resolve(space, hint) == _resolve(space, "favourite band")
