"""The audit log across organizations: a superadmin may read any organization's, nobody else may
(``GET /api/knowledge/audit``: owner or admin, a superadmin for any organization; OD-B13)."""

from __future__ import annotations

from kb_harness import World


def test_a_superadmin_reads_another_organizations_audit_log(world: World) -> None:
    kb = world.create_kb()
    assert world.request("DELETE", f"/kb/{kb['id']}", world["owner"]).status_code == 204
    response = world.request("GET", "/audit", world["superadmin"], params={"organizationId": world.a})
    assert response.status_code == 200, response.text
    actions = [e["action"] for e in response.json()["entries"]]
    assert actions == ["knowledge_base.delete"]


def test_anyone_else_asking_for_another_organization_gets_the_plain_404(world: World) -> None:
    asked = world.request("GET", "/audit", world["b_owner"], params={"organizationId": world.a})
    never = world.request("GET", "/audit", world["superadmin"], params={"organizationId": "no-such-org"})
    assert (asked.status_code, asked.content) == (404, b'{"error":"Not found"}')
    assert (never.status_code, never.content) == (404, b'{"error":"Not found"}')


def test_an_action_filter_outside_the_audited_actions_is_refused_naming_them_OD_B19(world: World) -> None:
    """Only three actions are ever written, so any other filter is a mistake the caller should hear
    about; a NUL, which PostgreSQL's text cannot even compare, is refused the same way on both."""
    kb = world.create_kb()
    assert world.request("DELETE", f"/kb/{kb['id']}", world["owner"]).status_code == 204
    # percent-encoded by hand: the last is bytes that are not UTF-8 at all (a lone surrogate's encoding)
    for action in ["knowledge_base.create", "knowledge_base.delete%00", "%00", "%ED%A0%80"]:
        response = world.request("GET", f"/audit?action={action}", world["owner"])
        assert response.status_code == 400, (action, response.text)
        message = response.json()["message"]
        assert "action" in message and "knowledge_base.agent_link" in message, (action, message)
    assert [e["action"] for e in world.audit("knowledge_base.delete")] == ["knowledge_base.delete"]


def test_a_member_asking_with_a_bad_action_filter_is_still_refused_for_the_role_first(world: World) -> None:
    response = world.request("GET", "/audit", world["member"], params={"action": "\x00"})
    assert response.status_code == 403, response.text
