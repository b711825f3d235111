"""The audit log across organizations: a superadmin may read any organization's, nobody else may
(issue item "GET /api/knowledge/audit (owner/admin; superadmin for any organization)", OD-B13)."""

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
