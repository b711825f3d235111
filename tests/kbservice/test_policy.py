"""The one permission question (STYLE 1): decide(actor, action, target) in evaluation order."""

from __future__ import annotations

import pytest

from notochord.kbservice import Action, Actor, Level, OrgRole, OrgScope, Outcome, Resource, ResourceType, decide


def _actor(role: OrgRole | None, *, org: str = "acme", superadmin: bool = False) -> Actor:
    return Actor(user_id="u", organization_id=org, email=None, is_superadmin=superadmin, org_role=role)


KB = Resource(ResourceType.KB, "00000000-0000-4000-8000-000000000000", "acme")
FOREIGN = Resource(ResourceType.KB, "00000000-0000-4000-8000-000000000001", "globex")


@pytest.mark.parametrize("action", list(Action))
def test_another_orgs_resource_is_hidden_from_everyone_but_a_superadmin(action: Action) -> None:
    target = (
        FOREIGN if action in {Action.VIEW, Action.EDIT, Action.DELETE, Action.MANAGE_GRANTS} else OrgScope("globex")
    )
    assert (
        decide(actor=_actor(OrgRole.OWNER), action=action, target=target, grant=Level.DELETE).outcome is Outcome.HIDDEN
    )
    assert decide(actor=_actor(None, superadmin=True), action=action, target=target).allowed


@pytest.mark.parametrize(
    ("role", "grant", "allowed"),
    [
        (OrgRole.OWNER, Level.NONE, {Action.VIEW, Action.EDIT, Action.DELETE}),
        (OrgRole.MEMBER, Level.NONE, {Action.VIEW, Action.EDIT, Action.DELETE}),
        (OrgRole.VIEWER, Level.NONE, {Action.VIEW}),
        (OrgRole.VIEWER, Level.EDIT, {Action.VIEW, Action.EDIT}),
        (OrgRole.VIEWER, Level.DELETE, {Action.VIEW, Action.EDIT, Action.DELETE}),
        (None, Level.NONE, set()),
        (None, Level.VIEW, {Action.VIEW}),
    ],
)
def test_resource_level_is_the_higher_of_role_and_grant_OD_B09_B10(
    role: OrgRole | None, grant: Level, allowed: set[Action]
) -> None:
    for action in (Action.VIEW, Action.EDIT, Action.DELETE):
        decision = decide(actor=_actor(role), action=action, target=KB, grant=grant)
        assert decision.allowed is (action in allowed), (role, grant, action)


def test_organization_actions_need_their_minimum_role() -> None:
    scope = OrgScope("acme")
    assert not decide(actor=_actor(OrgRole.VIEWER), action=Action.CREATE, target=scope).allowed
    assert decide(actor=_actor(OrgRole.MEMBER), action=Action.CREATE, target=scope).allowed
    assert not decide(actor=_actor(OrgRole.MEMBER), action=Action.READ_AUDIT, target=scope).allowed
    assert decide(actor=_actor(OrgRole.ADMIN), action=Action.READ_AUDIT, target=scope).allowed
    assert not decide(actor=_actor(OrgRole.MEMBER), action=Action.MANAGE_GRANTS, target=KB).allowed
    assert decide(actor=_actor(OrgRole.VIEWER), action=Action.LIST, target=scope).allowed
    assert decide(actor=_actor(None), action=Action.CREATE, target=scope).reason == "Requires member role or higher"
