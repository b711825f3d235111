"""The console's words (English, Chinese) for what did not happen and why, joined into
:data:`notochord.console.i18n.LABELS`.

Here: the page of a store that cannot be used right now, the page of a request that failed on the
server's side, why a file rollback left a path alone (one label ``skip_<code>`` per code of
:mod:`notochord.files.skips`, filled from that code's values), and why an undo was refused (one label
``revert_<code>`` per reason of :class:`notochord.errors.RevertError`, filled from its values).
"""

from __future__ import annotations

from typing import Final

__all__ = ["RECOVERY_LABELS"]

RECOVERY_LABELS: Final[dict[str, tuple[str, str]]] = {
    # the store cannot be used right now (503)
    "unavailable_title": ("Your vault cannot be reached right now", "暂时无法访问你的知识库"),
    "unavailable_unreachable": (
        "The database server that holds your vault does not answer at the moment. Nothing was changed. "
        "Try again in a few seconds; if this goes on, check that the database server is running.",
        "保存你知识库的数据库服务器暂时没有响应。没有做任何改动。请过几秒钟再试;如果一直这样,请检查数据库服务器是否在运行。",
    ),
    "unavailable_locked": (
        "Another program is using your vault right now (a backup or a check, say). Nothing was changed. "
        "Try again in a few seconds.",
        "另一个程序正在使用你的知识库(比如备份或检查)。没有做任何改动。请过几秒钟再试。",
    ),
    "unavailable_retry": ("Try again", "重试"),
    # why a file rollback left a path alone
    "skip_state_unknown": (
        "what it held right after the change is not known, so it cannot be told whether it changed since",
        "不知道改动刚完成时它的内容,无法判断之后是否又被改动过",
    ),
    "skip_later_run_changed": (
        "run {run} later changed {path}; roll that run back first",
        "运行 {run} 后来改动了 {path};请先恢复那次运行",
    ),
    "skip_later_run_moved": (
        "run {run} later moved {path} to {to}; roll that run back first",
        "运行 {run} 后来把 {path} 移到了 {to};请先恢复那次运行",
    ),
    "skip_changed_since": (
        "it changed since (by the user or another program), so it stays as it is",
        "之后它又被改动过(被你或其他程序),所以保持原样",
    ),
    "skip_move_origin_taken": (
        "{path} is taken again since the move, so {to} stays where it is",
        "移动之后 {path} 又被占用了,所以 {to} 留在原处",
    ),
    "skip_moved_changed_since": (
        "it changed since the move (by the user or another program), so it stays where it is",
        "移动之后它又被改动过(被你或其他程序),所以留在原处",
    ),
    "skip_moved_folder_changed_since": (
        "it or something in it changed since the move (by the user or another program), so it stays where it is",
        "移动之后它或其中的内容又被改动过(被你或其他程序),所以留在原处",
    ),
    "skip_no_earlier_version": (
        "no earlier version of it was kept, so it stays as it is",
        "没有保存它较早的版本,所以保持原样",
    ),
    "skip_version_dropped": (
        "its earlier version was dropped to keep the file history within its size (the {setting} setting), "
        "so it stays as it is",
        "为了让文件历史不超过其大小上限({setting} 设置),它较早的版本已被删除,所以保持原样",
    ),
    "skip_in_trash_no_trash": (
        "its earlier version was too large for the file history and was put in the trash ({location}); "
        "there is no trash here to take it back from, so the file stays as it is: restore it from there by hand",
        "它较早的版本太大,没有存进文件历史,而是放进了回收站({location});这里没有回收站可以取回,"
        "所以文件保持原样:请到那里手动恢复",
    ),
    "skip_in_trash_unavailable": (
        "its earlier version was too large for the file history and was put in the trash ({location}), "
        "but it cannot be taken back from there ({detail}); the file stays as it is",
        "它较早的版本太大,没有存进文件历史,而是放进了回收站({location}),但无法从那里取回({detail});文件保持原样",
    ),
    "skip_history_copy_missing": (
        "the copy of its earlier version is missing from the file history, so it stays as it is",
        "文件历史里缺少它较早版本的副本,所以保持原样",
    ),
    "skip_folder_became_link": (
        "a folder on its way was replaced by a link since, so it stays as it is",
        "它路径上的一个文件夹后来被换成了链接,所以保持原样",
    ),
    "skip_not_put_back": ("it could not be put back: {detail}", "无法把它放回原处:{detail}"),
    # why an undo was refused; "{actor}" is one of the revert_actor_* words
    "kn_restore_refused": ("It cannot be restored: {reason}", "无法恢复:{reason}"),
    "revert_superseded": (
        "superseded by the later change {later}, made by {actor} ({summary}); "
        "revert that one first (or the whole run), or edit the value directly",
        "之后的改动 {later}({summary},来自{actor})已经取代了它;请先撤销那项改动(或整次运行),或者直接修改这个值",
    ),
    "revert_entity_deleted": (
        "superseded, the entity {predicate} points at was deleted since; undo that deletion first",
        "{predicate} 指向的实体之后被删除了;请先撤销那次删除",
    ),
    "revert_key_taken": (
        "superseded, another document now has the key {key}",
        "另一篇文档现在用着键 {key}",
    ),
    "revert_collection_not_empty": (
        "the collection is not empty; move or delete what is inside first",
        "这个知识库不是空的;请先移走或删除里面的内容",
    ),
    "revert_document_place_removed": (
        "superseded, the collection the document was in was removed since; undo that removal first",
        "这篇文档原来所在的知识库之后被删除了;请先撤销那次删除",
    ),
    "revert_collection_place_removed": (
        "superseded, the collection it was in was removed since; undo that removal first",
        "它原来所在的上级知识库之后被删除了;请先撤销那次删除",
    ),
    "revert_old_parent_inside": (
        "superseded, its old parent {parent} now sits inside the collection; move that one out first",
        "它原来的上级知识库 {parent} 现在位于它里面;请先把 {parent} 移出来",
    ),
    "revert_too_deep": (
        "superseded, moving it back would nest collections more than {depth} levels deep (the depth limit); "
        "move some of what is inside it first",
        "移回原处会让知识库嵌套超过 {depth} 层(层数上限);请先移走它里面的一部分内容",
    ),
    "revert_actor_user": ("you", "你"),
    "revert_actor_assistant": ("the assistant", "助手"),
    "revert_actor_system": ("notochord itself", "notochord 自身"),
    "revert_actor_gem": ("gem {gem}", "gem {gem}"),
    # a request that failed on the server's side (500)
    "failed_back": ("Back to the page", "返回页面"),
    "failed_title": ("Something went wrong", "出了点问题"),
    "failed_message": (
        "Something went wrong on this computer's side while answering this request. What you asked for "
        "may not have been done: check the page before trying again. The details are in the server's log "
        "(the output of notochord serve).",
        "处理这个请求时,这台电脑这边出了问题。你要求的操作可能没有完成:请先查看页面再重试。"
        "详细信息在服务器日志中(notochord serve 的输出)。",
    ),
}
