"""The Knowledge pages in a real browser: Playwright driving the system's Chromium against a real
server (K-UI-12). One browser serves the module; each test has
its own data directory and browser context."""

from __future__ import annotations

import pytest
from console_harness import ConsoleServer, assert_fits_a_phone, signed_in_page
from playwright.sync_api import Browser, expect


def test_move_a_collection_under_another_and_see_a_refused_move_explained(
    browser: Browser, console: ConsoleServer
) -> None:
    """K-UI-12, K-COL-13, OD-K56: from the Knowledge nav, the user moves
    Soups into Recipes in place (no reload); moving Recipes into its own subfolder is refused with
    the API's sentence next to the picker, which takes the focus, and nothing moves."""
    space = console.space
    recipes = space.user.collections.create("Recipes")
    soups = space.user.collections.create("Soups")
    space.user.documents.upsert(collection=soups.id, title="Borscht", body="beetroot")
    page = signed_in_page(browser, console)
    page.get_by_role("link", name="Knowledge", exact=True).click()
    tree = page.locator("#kn-tree")
    expect(tree.locator(f'[data-collection="{soups.id}"]')).to_contain_text("1 document")
    tree.get_by_role("link", name="Soups").click()
    expect(page.get_by_role("heading", name="Soups", exact=True)).to_be_visible()

    page.evaluate("window.reloaded = false")
    page.get_by_label("Move it into").select_option(label="Recipes")
    page.get_by_role("button", name="Move", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Moved.")
    expect(page.locator(".crumbs")).to_contain_text("Collections › Recipes › Soups")
    assert page.evaluate("window.reloaded") is False, "the move reloaded the page instead of swapping its part"
    assert space.user.collections.get(soups.id).parent_id == recipes.id

    page.locator(".crumbs").get_by_role("link", name="Recipes").click()
    expect(page.get_by_role("heading", name="Recipes", exact=True)).to_be_visible()
    page.get_by_label("Move it into").select_option(label="\u2003Soups")
    page.get_by_role("button", name="Move", exact=True).click()
    error = page.locator("#move-error")
    expect(error).to_have_text("a collection cannot be moved into itself or one of its subfolders")
    expect(page.get_by_label("Move it into")).to_have_attribute("aria-invalid", "true")
    # the keyboard user lands on the field to fix, not at the top of the page
    expect(page.get_by_label("Move it into")).to_be_focused()
    assert space.user.collections.get(recipes.id).parent_id is None

    page.get_by_role("link", name="Collections", exact=True).first.click()
    nested = page.locator(f'#kn-tree [data-collection="{recipes.id}"] [data-collection="{soups.id}"]')
    expect(nested).to_contain_text("Soups")


def test_merge_two_entities_by_name_with_the_keyboard_and_undo_it_on_view_changes(
    browser: Browser, console: ConsoleServer
) -> None:
    """K-UI-12, K-ENT-11, K-ENT-12, K-UI-11: the user types the other's
    name and presses Enter; the kept entity now has both sets of identifiers, the old id leads
    to it, and the merge is on "View changes" where Undo separates them again."""
    space = console.space
    ann = space.user.entities.resolve(kind="person", create=True, name="Ann Lee", email="ann@example.com")
    annie = space.user.entities.resolve(kind="person", create=True, name="Annie", phone="+31 6 12345678")
    assert ann is not None and annie is not None
    page = signed_in_page(browser, console)
    page.goto(f"{console.url}/knowledge/entities")
    page.get_by_label("Name or identifier").fill("ann@")
    page.keyboard.press("Enter")
    page.get_by_role("link", name="Ann Lee").click()
    expect(page.get_by_role("heading", name="Ann Lee")).to_be_visible()

    other = page.get_by_label("Merge another person into this one: their name")
    other.fill("Annie")
    other.press("Enter")
    expect(page.get_by_role("status")).to_have_text("Merged Annie into Ann Lee.")
    expect(page.locator("#entity-identifiers")).to_contain_text("+31 6 12345678")
    assert space.user.entities.get(annie.id).id == ann.id
    page.goto(f"{console.url}/knowledge/entities/{annie.id}")
    expect(page).to_have_url(f"{console.url}/knowledge/entities/{ann.id}")

    page.get_by_role("link", name="View changes").click()
    merge = page.locator(".change", has_text="merged Annie into Ann Lee")
    expect(merge).to_have_count(1)
    merge.get_by_role("button", name="Undo", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Undone: 1 change.")
    assert space.user.entities.get(annie.id).id == annie.id


def test_the_knowledge_pages_in_chinese(browser: Browser, console: ConsoleServer) -> None:
    """SPEC §24 D-03: the Knowledge page and collections are 知识库 in Chinese."""
    space = console.space
    space.user.collections.create("菜谱")
    person = space.user.entities.resolve(kind="person", create=True, name="张三")
    assert person is not None
    space.user.facts.put(subject=person.id, predicate="work.company", value="Acme")
    page = signed_in_page(browser, console, locale="zh-CN")
    page.get_by_role("link", name="知识库", exact=True).first.click()
    expect(page.get_by_role("heading", name="新建知识库")).to_be_visible()
    expect(page.locator("#kn-tree")).to_contain_text("菜谱")
    page.get_by_role("link", name="联系人").click()
    expect(page.locator(".fact-row", has_text="公司")).to_be_visible()


@pytest.mark.parametrize("which", ["tree", "collection", "document", "entities", "entity", "contacts"])
def test_at_360_px_no_knowledge_page_is_wider_than_the_screen(
    browser: Browser, console: ConsoleServer, which: str
) -> None:
    """The Knowledge pages work on a 360 px phone, with no sideways scrolling,
    long names wrapping, and nothing breaking the Content-Security-Policy."""
    space = console.space
    long_name = "A-very-long-collection-name-without-any-spaces-" * 3
    recipes = space.user.collections.create(long_name)
    inner = space.user.collections.create("Soups", parent=recipes.id)
    doc = space.user.documents.upsert(collection=inner.id, title="T" * 120, body="word " * 400 + "x" * 200)
    person = space.user.entities.resolve(kind="person", create=True, name="Zhang San", email="z" * 60 + "@example.com")
    assert person is not None
    space.user.facts.put(subject=person.id, predicate="work.company", value="Acme")
    path = {
        "tree": "/knowledge",
        "collection": f"/knowledge/collections/{inner.id}",
        "document": f"/knowledge/documents/{doc.id}",
        "entities": "/knowledge/entities",
        "entity": f"/knowledge/entities/{person.id}",
        "contacts": "/knowledge/contacts",
    }[which]
    page = signed_in_page(browser, console, width=360)
    assert_fits_a_phone(page, f"{console.url}{path}")
